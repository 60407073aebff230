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
        @watcher = nil
      end

      # Calls the block, in the job thread and one at a time, each time a
      # job starts or ends: what runs then ({#running}) and the jobs done.
      # Replaces the block given before. The worker writes them on the
      # scoreboard there, so that the monitor knows what a worker killed
      # mid-job was running, where the main thread's report comes only once
      # a tick.
      # @yieldparam running [String, nil]
      # @yieldparam done [Integer]
      def watch(&block)
        @mutex.synchronize { @watcher = block }
      end

      # In a job thread: a job of class `name` starts.
      # @param name [String]
      def start(name)
        @mutex.synchronize do
          @running[Thread.current] = name
          @watcher&.call(label, @done)
        end
      end

      # In a job thread: its job ended, done or failed (both count, as in
      # Sidekiq's own statistics).
      def finish
        @mutex.synchronize do
          next unless @running.delete(Thread.current)

          @done += 1
          @watcher&.call(label, @done)
        end
      end

      # @return [Integer] jobs finished in this process
      def done
        @mutex.synchronize { @done }
      end

      # @return [String, nil] the classes of the jobs running now, e.g.
      #   "HardJob x2, MailJob"; nil when none runs
      def running
        @mutex.synchronize { label }
      end

      # In a process forked from one that ran jobs: none of those are its own.
      def reset
        @mutex = Mutex.new
        @running = {}
        @done = 0
        @watcher = nil
      end

      private

      def label
        names = @running.values
        return if names.empty?

        counts = names.tally.sort_by { |name, count| [-count, name] }
        shown = counts.first(SHOWN).map { |name, count| (count > 1) ? "#{name} x#{count}" : name }
        shown << "+#{counts.size - SHOWN}" if counts.size > SHOWN
        shown.join(", ")
      end
    end
  end
end
