# frozen_string_literal: true

require_relative "jobs"
require_relative "../jobs/solid_queue_engine"

module Herd
  class CLI
    # `herd solid_queue [-c FILE] [-w N] [-- bin/jobs's options]`: the
    # processes config/queue.yml declares, forked from one mold, reforked.
    class SolidQueue < Jobs
      COMMAND = "solid_queue"
      SYSTEM = "Solid Queue"
      BANNER = "Usage: herd solid_queue [-c config/herd_solid_queue.rb] [-w N] " \
        "[-- bin/jobs's own options: -c FILE, --recurring_schedule_file FILE, --skip_recurring, --only_recurring]"
      EXAMPLE = "herd solid_queue -w 3 -- --skip_recurring"
      CONVENTIONAL_FILE = "config/herd_solid_queue.rb"
      WORKERS_ENV = "HERD_JOB_WORKERS"

      private

      def workers_help
        "processes: the Nth runs config/queue.yml's Nth worker (round the list), " \
          "the first also its dispatchers and scheduler (default: $#{WORKERS_ENV}, else usable CPUs)"
      end

      # Parsed here, so that a wrong option is one line before anything starts.
      def engine(argv)
        Herd::Jobs::SolidQueueEngine.new(argv)
      end
    end
  end
end
