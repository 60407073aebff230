# frozen_string_literal: true

require "optparse"
require_relative "../jobs"
require_relative "../cluster/lean_monitor"
require_relative "../server/settings_sources"
require_relative "settings"

module Herd
  class CLI
    # What `herd sidekiq` and `herd solid_queue` share: herd's flags, then
    # the job system's own after `--`. A subclass names its command, its
    # config file, the variable that sets its workers, and its engine.
    class Jobs
      # @param debug [Boolean] `--debug` was given (kept across the re-exec)
      def initialize(out: $stdout, err: $stderr, debug: false)
        @out = out
        @err = err
        @debug = debug
      end

      # @return [Integer] exit status
      def run(argv)
        Cluster::LeanMonitor.adopt! || Cluster::LeanMonitor.reexec([command, *argv, *("--debug" if @debug)])
        herd_argv, own_argv = split(argv)
        config = parse(herd_argv)
        return 0 unless config

        Herd::Jobs.run(config, engine(own_argv))
      end

      private

      def command
        self.class::COMMAND
      end

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
          opts.banner = self.class::BANNER
          opts.require_exact = true
          opts.on("-c", "--config FILE",
            "herd's settings for these workers (default: #{self.class::CONVENTIONAL_FILE} when it exists)") { |path| file = path }
          opts.on("-w", "--workers N", Integer, workers_help) { |n| flags.workers = n }
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
          raise UsageError, "#{command}: #{rest.join(" ")}: #{self.class::SYSTEM}'s own options go after --, " \
            "e.g. #{self.class::EXAMPLE}"
        end

        build(file, flags, others)
      rescue OptionParser::ParseError => e
        raise UsageError, "#{command}: #{e.message} (#{self.class::SYSTEM}'s own options go after --)"
      end

      def build(file, flags, others)
        sources = Server::SettingsSources.new(file: file, conventional_file: self.class::CONVENTIONAL_FILE,
          workers_env: self.class::WORKERS_ENV, listens: false)
        config = Settings.build(sources, flags, others, -> { Herd::Jobs.config })
        config.reloader = -> { build(file, flags, others) }
        config
      end
    end
  end
end
