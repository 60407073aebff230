# frozen_string_literal: true

require "rbconfig"
require_relative "env_switch"

module Herd
  # herd's optional C extension (ext/herd/head_scanner), built when the gem
  # is installed (`rake compile` in a checkout). Everything in it has a Ruby
  # (or Fiddle) counterpart that stays the reference: the request-head
  # scanner and response-header checks (HTTP::HeadScanner), the workers'
  # accept and scoreboard writes, and prctl(2) for pool workers
  # (Linux::Native).
  #
  # `HERD_HEAD_SCANNER=0` (or false, no, off) leaves all of it unused.
  # @api private
  module Extension
    ENV_SWITCH = "HERD_HEAD_SCANNER"

    # A checkout builds it per Ruby (`rake compile`, for each Ruby of the
    # test matrix); an installed gem has the one RubyGems built.
    begin
      begin
        require "herd/#{RbConfig::CONFIG["ruby_version"]}/head_scanner"
      rescue LoadError
        require "herd/head_scanner"
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
      return "the C extension is not built (#{LOAD_ERROR}); `rake compile` builds it" unless built?
      return "#{ENV_SWITCH}=#{env[ENV_SWITCH]}" if EnvSwitch.off?(env[ENV_SWITCH])

      nil
    end
  end
end
