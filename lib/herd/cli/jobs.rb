# frozen_string_literal: true

require "optparse"
require_relative "../jobs"
require_relative "../cluster/lean_monitor"
require_relative "../server/settings_sources"
require_relative "settings"
require_relative "server_command"

module Herd
  class CLI
    # What `herd sidekiq` and `herd solid_queue` share: herd's flags, then
    # the job system's own after `--`. A subclass names its command, its
    # config file, the variable that sets its workers, and its engine.
    class Jobs < ServerCommand
      # @return [Integer] exit status
      def run(argv)
        go_lean(command, argv)
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
          config_help = "herd's settings for these workers (default: #{self.class::CONVENTIONAL_FILE} when it exists)"
          opts.on("-c", "--config FILE", config_help) { |path| file = path }
          opts.on("-w", "--workers N", Integer, workers_help) { |n| flags.workers = n }
          Settings.process_model_flags(opts, others)
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
