# frozen_string_literal: true

require "optparse"
require_relative "../env_switch"
require_relative "../jobs"
require_relative "../jobs/sidekiq_engine"
require_relative "../cluster/lean_monitor"
require_relative "../server/settings_sources"

module Herd
  class CLI
    # `herd sidekiq [-c FILE] [-w N] [-- sidekiq's options]`: N Sidekiq
    # processes forked from one mold, reforked like herd serve's workers.
    class Sidekiq
      BANNER = "Usage: herd sidekiq [-c config/herd_sidekiq.rb] [-w N] [-- sidekiq's own options: -C, -r, -q, -c, -t, -e, -g]"
      # herd's settings for job workers, when no -c names a file.
      CONVENTIONAL_FILE = "config/herd_sidekiq.rb"
      # How many processes, as Sidekiq Enterprise's swarm reads it.
      WORKERS_ENV = "SIDEKIQ_COUNT"

      # @param debug [Boolean] `--debug` was given (kept across the re-exec)
      def initialize(out: $stdout, err: $stderr, debug: false)
        @out = out
        @err = err
        @debug = debug
      end

      # @return [Integer] exit status
      def run(argv)
        Cluster::LeanMonitor.adopt! || Cluster::LeanMonitor.reexec(["sidekiq", *argv, *("--debug" if @debug)])
        herd_argv, sidekiq_argv = split(argv)
        config = parse(herd_argv)
        return 0 unless config

        Jobs.run(config, Jobs::SidekiqEngine.new(sidekiq_argv))
      end

      private

      def split(argv)
        at = argv.index("--")
        at ? [argv[0...at], argv[(at + 1)..]] : [argv, []]
      end

      # @return [Server::Config, nil] nil after --help
      def parse(argv)
        flags = Server::Flags.new
        others = []
        file = nil
        parser = OptionParser.new do |opts|
          opts.banner = BANNER
          opts.require_exact = true
          opts.on("-c", "--config FILE",
            "herd's settings for these workers (default: #{CONVENTIONAL_FILE} when it exists)") { |path| file = path }
          opts.on("-w", "--workers N", Integer,
            "Sidekiq processes (default: $#{WORKERS_ENV}, else usable CPUs)") { |n| flags.workers = n }
          opts.on("--no-subreaper", "plain preload: the monitor loads the app and forks workers itself") do
            others << ->(c) { c.subreaper = false }
          end
          opts.on(Cluster::LeanMonitor::FLAG,
            "keep RubyGems and Bundler in the monitor (no re-exec); also HERD_LEAN_MONITOR=0") {}
          opts.on("-h", "--help") do
            @out.puts(opts)
            return nil
          end
        end
        rest = parser.parse(argv)
        unless rest.empty?
          raise UsageError, "sidekiq: #{rest.join(" ")}: Sidekiq's own options go after --, " \
            "e.g. herd sidekiq -w 4 -- -q critical -c 10"
        end

        build(file, flags, others)
      rescue OptionParser::ParseError => e
        raise UsageError, "sidekiq: #{e.message} (Sidekiq's own options go after --)"
      end

      def build(file, flags, others)
        sources = Server::SettingsSources.new(file: file, conventional_file: CONVENTIONAL_FILE,
          workers_env: WORKERS_ENV, listens: false)
        config = sources.build(flags, config: read_config(sources.file))
        config.subreaper = false if EnvSwitch.on?(ENV["HERD_NO_SUBREAPER"])
        others.each { |flag| flag.call(config) }
        config.validate!
        config.reloader = -> { build(file, flags, others) }
        config
      end

      # As herd serve's: a file that requires a gem needs RubyGems back.
      def read_config(file)
        return Jobs.config unless file

        Jobs.config.load_file(file)
      rescue ConfigError => e
        raise unless e.cause.is_a?(LoadError) && Cluster::LeanMonitor.restore!

        Jobs.config.load_file(file)
      end
    end
  end
end
