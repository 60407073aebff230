# frozen_string_literal: true

require_relative "jobs"
require_relative "../jobs/sidekiq_engine"

module Herd
  class CLI
    # `herd sidekiq [-c FILE] [-w N] [-- sidekiq's options]`: N Sidekiq
    # processes forked from one mold, reforked like herd serve's workers.
    class Sidekiq < Jobs
      COMMAND = "sidekiq"
      SYSTEM = "Sidekiq"
      BANNER = "Usage: herd sidekiq [-c config/herd_sidekiq.rb] [-w N] " \
        "[-- sidekiq's own options: -C, -r, -q, -c, -t, -e, -g]"
      EXAMPLE = "herd sidekiq -w 4 -- -q critical -c 10"
      # herd's settings for these workers, when no -c names a file.
      CONVENTIONAL_FILE = "config/herd_sidekiq.rb"
      # How many processes, as Sidekiq Enterprise's swarm reads it.
      WORKERS_ENV = "SIDEKIQ_COUNT"

      private

      def workers_help
        "Sidekiq processes (default: $#{WORKERS_ENV}, else usable CPUs)"
      end

      def engine(argv)
        Herd::Jobs::SidekiqEngine.new(argv)
      end
    end
  end
end
