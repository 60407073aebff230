# frozen_string_literal: true

require "optparse"
require_relative "../server"
require_relative "../server/lean_monitor"

module Herd
  class CLI
    # `herd serve [config.ru] [-c herd.rb] [options]`
    class Serve
      BANNER = "Usage: herd serve [config.ru] [-c herd.rb] [options]"

      # @param debug [Boolean] `--debug` was given (kept across the re-exec)
      def initialize(out: $stdout, err: $stderr, debug: false)
        @out = out
        @err = err
        @debug = debug
      end

      # Re-executes without RubyGems first (Server::LeanMonitor), then
      # parses the arguments and the config file and runs the server.
      # @return [Integer] exit status
      def run(argv)
        Server::LeanMonitor.adopt! || Server::LeanMonitor.reexec(["serve", *argv, *("--debug" if @debug)])
        config = parse(argv)
        return 0 unless config

        Server.run(config)
      end

      private

      # Defaults, then the config file, then flags: flags win.
      # @return [Server::Config, nil] nil after --help
      def parse(argv)
        flags = []
        file = nil
        parser = OptionParser.new do |opts|
          opts.banner = BANNER
          opts.on("-c", "--config FILE", "Ruby config file (see docs/CONFIGURATION.md)") { |path| file = path }
          opts.on("-w", "--workers N", Integer, "worker processes (default: usable CPUs)") { |n| flags << ->(c) { c.workers = n } }
          opts.on("-l", "--listen ADDRESS", "host:port, [ipv6]:port, port or unix:/path; repeatable (default localhost:8080)") do |address|
            flags << ->(c) { c.add_listener(address) }
          end
          opts.on("-t", "--timeout SECONDS", Float, "kill a worker stuck in one request this long (default 30)") { |s| flags << ->(c) { c.timeout = s } }
          opts.on("--access-log PATH", "one line per request (- for stdout)") do |path|
            flags << ->(c) { c.access_log = (path == "-") ? @out : path }
          end
          opts.on("--no-subreaper", "plain preload: the monitor loads the app and forks workers itself") do
            flags << ->(c) { c.subreaper = false }
          end
          opts.on(Server::LeanMonitor::FLAG, "keep RubyGems and Bundler in the monitor (no re-exec); also HERD_LEAN_MONITOR=0") {}
          opts.on("-h", "--help") do
            @out.puts(opts)
            return nil
          end
        end
        rest = parser.parse(argv)
        raise UsageError, "serve takes one Rack app file, got #{rest.join(" ")}" if rest.size > 1

        build(file, rest.first, flags)
      rescue OptionParser::ParseError => e
        raise UsageError, "serve: #{e.message}"
      end

      def build(file, rackup, flags)
        config = file ? read_config(file) : Server::Config.new
        config.rackup = rackup if rackup
        config.subreaper = false if ENV["HERD_NO_SUBREAPER"] == "1"
        flags.each { |flag| flag.call(config) }
        config.validate!
        # HUP reads the file again, with the same flags on top.
        config.reloader = -> { build(file, rackup, flags) }
        config
      end

      # A config file that requires a gem fails in the lean monitor: load
      # RubyGems and Bundler back, and read it again from scratch.
      def read_config(file)
        Server::Config.new.load_file(file)
      rescue ConfigError => e
        raise unless e.cause.is_a?(LoadError) && Server::LeanMonitor.restore!

        Server::Config.new.load_file(file)
      end
    end
  end
end
