# frozen_string_literal: true

require "rbconfig"
require_relative "env_switch"

module Herd
  # herd's optional C extension (ext/herd/native), built when the gem is
  # installed (`rake compile` in a checkout). Everything in it has a Ruby
  # (or Fiddle) counterpart that stays the reference: the request-head
  # scanner and response-header checks (HTTP::HeadScanner,
  # HTTP::FieldLines), the final send (HTTP::FinalSend), the workers' accept
  # (Server::TCPAccept) and scoreboard writes (Cluster::ScoreboardSlots),
  # shared memory (SharedMemory::Native) and prctl(2) for pool workers
  # (Linux::Native). Each of their users asks {unused_reason} whether to use
  # its C part.
  #
  # `HERD_C_EXTENSION=0` (or false, no, off) leaves all of it unused; set at
  # gem install or `rake compile`, it is not built at all.
  # @api private
  module Extension
    ENV_SWITCH = "HERD_C_EXTENSION"

    # A checkout builds it per Ruby (`rake compile`, for each Ruby of the
    # test matrix); an installed gem has the one RubyGems built.
    begin
      begin
        require "herd/#{RbConfig::CONFIG["ruby_version"]}/native"
      rescue LoadError
        require "herd/native"
      end
      LOAD_ERROR = nil
    rescue LoadError => e
      LOAD_ERROR = e.message
    end

    # @return [Boolean] whether the extension is loaded (whatever the switch says)
    def self.built?
      LOAD_ERROR.nil?
    end

    # @return [String, nil] why the extension is not used, nil when it is
    def self.unused_reason(env = ENV)
      return "herd's C extension is not built (#{LOAD_ERROR}); `rake compile` builds it" unless built?
      return "#{ENV_SWITCH}=#{env[ENV_SWITCH]}" if EnvSwitch.off?(env[ENV_SWITCH])

      nil
    end
  end
end
