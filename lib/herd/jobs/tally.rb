# frozen_string_literal: true

module Herd
  module Jobs
    # The jobs of one worker process, as its job threads start and finish
    # them: how many are done, and which run now. Written from the job
    # threads (a middleware, a notification), read by the worker's main
    # thread, which alone reports to the monitor.
    # @api private
    class Tally
      # How many job names a worker's label lists before "+N".
      SHOWN = 3

      def initialize
        @mutex = Mutex.new
        @running = {}
        @done = 0
      end

      # In a job thread: a job of class `name` starts.
      # @param name [String]
      def start(name)
        @mutex.synchronize { @running[Thread.current] = name }
      end

      # In a job thread: its job ended, done or failed (both count, as in
      # Sidekiq's own statistics).
      def finish
        @mutex.synchronize do
          @done += 1 if @running.delete(Thread.current)
        end
      end

      # @return [Integer] jobs finished in this process
      def done
        @mutex.synchronize { @done }
      end

      # @return [String, nil] the classes of the jobs running now, e.g.
      #   "HardJob x2, MailJob"; nil when none runs
      def running
        names = @mutex.synchronize { @running.values }
        return if names.empty?

        counts = names.tally.sort_by { |name, count| [-count, name] }
        shown = counts.first(SHOWN).map { |name, count| (count > 1) ? "#{name} x#{count}" : name }
        shown << "+#{counts.size - SHOWN}" if counts.size > SHOWN
        shown.join(", ")
      end

      # In a process forked from one that ran jobs: none of those are its own.
      def reset
        @mutex = Mutex.new
        @running = {}
        @done = 0
      end
    end
  end
end
