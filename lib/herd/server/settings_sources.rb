# frozen_string_literal: true

require_relative "../errors"
require_relative "config"

module Herd
  module Server
    # Where a server's settings come from, and which wins: command-line
    # flags, then the environment, then the config file, then herd's
    # defaults. `herd serve`, `rackup -s herd` and `rails server -u herd`
    # all build their Config here, so the three agree.
    #
    # - The config file: the one named (`-c`, `-O Config=`), else
    #   `config/herd.rb` when it exists (as Puma reads config/puma.rb).
    # - The environment: `PORT` (listen on 0.0.0.0:PORT, as a platform that
    #   sets it expects) and `WEB_CONCURRENCY` (workers).
    # - Flags: `-w`, `-l` (repeatable), `-p` and `-b`. Listeners given by
    #   flags replace the file's and PORT's; they never add to them.
    # @api private
    class SettingsSources
      CONVENTIONAL_FILE = "config/herd.rb"
      PORT_HOST = Listener::ANY_HOST
      DEFAULT_PORT = 8080

      # @param file [String, nil] the config file named by the user
      # @param env [Hash] the environment
      # @param conventional_file [String] read when it exists and no file is named
      # @param workers_env [String] the environment variable that sets the workers
      # @param listens [Boolean] false: PORT is not ours (job workers bind nothing)
      def initialize(file: nil, env: ENV, conventional_file: CONVENTIONAL_FILE, workers_env: "WEB_CONCURRENCY",
        listens: true)
        @file = file
        @env = env
        @conventional_file = conventional_file
        @workers_env = workers_env
        @listens = listens
      end

      # @return [String, nil] the config file that will be read
      def file
        return @file if @file

        @conventional_file if File.file?(@conventional_file)
      end

      # @param flags [Flags] what the command line said
      # @param config [Config, nil] the file already read into it (the CLI
      #   retries a file that needs a gem); nil: read it here
      # @return [Config] with `origins` saying where the workers and the
      #   listeners came from (not validated: callers set more first)
      def build(flags, config: nil)
        config ||= file ? Config.new.load_file(file) : Config.new
        config.config_file = file
        apply_environment(config)
        apply_flags(config, flags)
        config
      end

      private

      def apply_environment(config)
        if (count = present(@workers_env))
          config.workers = Integer(count, 10, exception: false) ||
            raise(ConfigError, "#{@workers_env} must be a whole number of workers, got #{count.inspect}")
          config.origins[:workers] = @workers_env
        end
        return unless @listens && (port = present("PORT"))

        config.replace_listeners(["#{PORT_HOST}:#{port}"])
        config.origins[:listen] = "PORT"
      end

      # A launcher's default comes after the file and the environment.
      def apply_flags(config, flags)
        if flags.workers
          config.workers = flags.workers
          config.origins[:workers] = "a flag"
        end
        if config.listen_specs.empty? && flags.fallback_listen
          config.add_listener(flags.fallback_listen)
          config.origins[:listen] = "the launcher's defaults"
        end
        listen = flags.listen.dup
        if flags.port || flags.host
          port = flags.port || present("PORT") || first_port(config) || DEFAULT_PORT
          listen << "#{bracketed(flags.host || Listener::ANY_HOST)}:#{port}"
        end
        return if listen.empty?

        config.replace_listeners(listen)
        config.origins[:listen] = "a flag"
      end

      # `-b` alone keeps the port the file chose.
      def first_port(config)
        config.listen_specs.map { |spec| spec.address[/:(\d+)\z/, 1] || spec.address[/\A\d+\z/] }.compact.first
      end

      def bracketed(host)
        (host.include?(":") && !host.start_with?("[")) ? "[#{host}]" : host
      end

      def present(name)
        value = @env[name]
        value unless value.nil? || value.strip.empty?
      end
    end

    # What a command line (or rackup's options) said about the settings
    # that several sources can give. `fallback_listen` is a launcher's own
    # default (rackup's localhost:9292, rails server's :3000): below the
    # file and the environment, above herd's 0.0.0.0:8080.
    # @api private
    Flags = Struct.new(:workers, :listen, :port, :host, :fallback_listen, keyword_init: true) do
      def initialize(workers: nil, listen: [], port: nil, host: nil, fallback_listen: nil)
        super
      end
    end
  end
end
