# frozen_string_literal: true

require "optparse"
require_relative "../server"
require_relative "../cluster/lean_monitor"
require_relative "../server/settings_sources"
require_relative "settings"
require_relative "server_command"

module Herd
  class CLI
    # `herd serve [config.ru] [-c herd.rb] [options]`
    class Serve < ServerCommand
      BANNER = "Usage: herd serve [config.ru] [-c herd.rb] [options]"

      # Re-executes without RubyGems first (Cluster::LeanMonitor), then
      # parses the arguments and the config file and runs the server.
      # @return [Integer] exit status
      def run(argv)
        go_lean("serve", argv)
        config = parse(argv)
        return 0 unless config

        Server.run(config)
      end

      private

      # Flags, then the environment, then the config file, then defaults
      # (Server::SettingsSources).
      # @return [Server::Config, nil] nil after --help
      def parse(argv)
        flags = Server::Flags.new
        others = []
        file = nil
        parser = OptionParser.new do |opts|
          opts.banner = BANNER
          # No abbreviations: `-t` would otherwise complete to --timeout.
          opts.require_exact = true
          opts.on("-c", "--config FILE",
            "Ruby config file (default: config/herd.rb when it exists; docs/CONFIGURATION.md)") { |path| file = path }
          opts.on("-w", "--workers N", Integer,
            "worker processes (default: $WEB_CONCURRENCY, else usable CPUs)") { |n| flags.workers = n }
          opts.on("-l", "--listen ADDRESS",
            "host:port, [ipv6]:port, port (every interface) or unix:/path; " \
            "repeatable (default 0.0.0.0:8080)") do |address|
            flags.listen << address
          end
          opts.on("-p", "--port PORT", Integer,
            "listen on this port, every interface (default: $PORT, else 8080)") { |port| flags.port = port }
          opts.on("-b", "--bind HOST",
            "listen on this host (with -p's port), or on Puma's tcp://HOST:PORT or unix://PATH") do |bind|
            puma_style_bind(bind, flags)
          end
          opts.on("--timeout SECONDS", Float,
            "kill a worker stuck in one request this long (default 30)") { |s| others << ->(c) { c.timeout = s } }
          opts.on("--access-log PATH", "one line per request (- for stdout)") do |path|
            others << ->(c) { c.access_log = (path == "-") ? @out : path }
          end
          Settings.process_model_flags(opts, others)
          opts.on("-h", "--help") do
            @out.puts(opts)
            return nil
          end
        end
        rest = parser.parse(argv)
        raise UsageError, "serve takes one Rack app file, got #{rest.join(" ")}" if rest.size > 1

        build(file, rest.first, flags, others)
      rescue OptionParser::InvalidOption => e
        raise UsageError, retired_flag(e.args.first) || "serve: #{e.message}"
      rescue OptionParser::ParseError => e
        raise UsageError, "serve: #{e.message}"
      end

      # Short flags that mean something else in Puma or Unicorn: one line
      # saying what to type instead, since `-t 16` from a Puma user would
      # otherwise become a 16-second timeout.
      RETIRED_FLAGS = {
        "-t" => "serve: -t is not a flag of herd serve (in Puma it sets threads; " \
          "a herd worker serves one request at a time, so add workers with -w); " \
          "for the request timeout write --timeout SECONDS"
      }.freeze

      def retired_flag(arg)
        RETIRED_FLAGS.find { |flag, _|
          arg.to_s == flag || (arg.to_s.start_with?(flag) && !arg.to_s.start_with?("--"))
        }&.last
      end

      # `-b HOST` (as `rails server -b`) or Puma's `-b tcp://HOST:PORT` and
      # `-b unix://PATH`, so that a Puma command line means the same here.
      def puma_style_bind(bind, flags)
        case bind
        when %r{\Atcp://(.+)\z} then flags.listen << $1
        when %r{\Aunix://(.+)\z} then flags.listen << "unix:#{$1}"
        else flags.host = bind
        end
      end

      def build(file, rackup, flags, others)
        rackup_flag = rackup ? [->(config) { config.rackup = rackup }] : []
        config = Settings.build(Server::SettingsSources.new(file: file), flags, rackup_flag + others,
          -> { Server::Config.new })
        # HUP reads the file again, with the same flags on top.
        config.reloader = -> { build(file, rackup, flags, others) }
        config
      end
    end
  end
end
