# frozen_string_literal: true

require_relative "../env_switch"
require_relative "../cluster/lean_monitor"
require_relative "../server/settings_sources"

module Herd
  class CLI
    # How `herd serve`, `herd sidekiq` and `herd solid_queue` turn their
    # command line into a validated Config: flags, then the environment,
    # then the config file, then defaults (Server::SettingsSources).
    # @api private
    module Settings
      module_function

      # @param sources [Server::SettingsSources]
      # @param flags [Server::Flags]
      # @param others [Array<#call>] the other flags, each applied to the config
      # @param fresh [#call] a Config with the command's defaults
      # @return [Server::Config]
      # @raise [ConfigError]
      def build(sources, flags, others, fresh)
        config = sources.build(flags, config: read(sources.file, fresh))
        config.subreaper = false if EnvSwitch.on?(ENV["HERD_NO_SUBREAPER"])
        others.each { |flag| flag.call(config) }
        config.validate!
      end

      # The flags of the process model every server command has.
      # @param opts [OptionParser]
      # @param others [Array<#call>] where a flag's setting goes
      def process_model_flags(opts, others)
        opts.on("--no-subreaper", "plain preload: the monitor loads the app and forks workers itself") do
          others << ->(config) { config.subreaper = false }
        end
        opts.on(Cluster::LeanMonitor::FLAG,
          "keep RubyGems and Bundler in the monitor (no re-exec); also HERD_LEAN_MONITOR=0") {}
      end

      # A config file that requires a gem fails in the lean monitor: load
      # RubyGems and Bundler back, and read it again into a fresh Config
      # (SettingsSources does not read it: the retry needs a fresh one).
      # @return [Server::Config] with the file read, for SettingsSources to finish
      def read(file, fresh)
        return fresh.call unless file

        fresh.call.load_file(file)
      rescue ConfigError => e
        raise unless e.cause.is_a?(LoadError) && Cluster::LeanMonitor.restore!

        fresh.call.load_file(file)
      end
    end
  end
end
