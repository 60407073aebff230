# frozen_string_literal: true

module Herd
  module Heap
    # Runs CPU-heavy work that nobody is waiting on at a lower CPU priority,
    # in a thread of its own: a mold preparing its heap while the current
    # generation serves requests (a refork, a reload) then takes the CPU the
    # workers leave, instead of half of it.
    #
    # Why a thread and not the process: Linux gives every thread its own nice
    # value (setpriority on its thread id), and raising one's nice value is
    # allowed to anyone while lowering it back is not (RLIMIT_NICE, 0 on most
    # systems). The mold's main thread forks the workers, which inherit its
    # nice value: it must stay at the priority it has. The work's thread ends
    # with the work.
    #
    # Everywhere else (not Linux, no Thread#native_thread_id, a kernel that
    # refuses) the block runs on the calling thread, at its priority, and
    # {Outcome#to_s} says why.
    # @api private
    module LowPriority
      # What {LowPriority.run} did: the niceness the work ran at, or why it
      # ran at the caller's.
      Outcome = Struct.new(:nice, :skipped) do
        # @return [String] for a log line
        def to_s
          skipped ? "at the caller's priority (#{skipped})" : "at nice #{nice}"
        end
      end

      # The nice values a thread may take: above the default, at most the lowest priority.
      RANGE = (1..19)

      class << self
        # @param nice [Integer, nil] 1..19; nil or 0 runs the block inline
        # @return [Array(Object, Outcome, nil)] the block's value, and how it
        #   ran (nil when no lower priority was asked for)
        def run(nice)
          return [yield, nil] if nice.nil? || nice == 0

          unless nice.is_a?(Integer) && RANGE.cover?(nice)
            raise ArgumentError, "nice: must be an Integer in #{RANGE} (0 or nil: the caller's priority), " \
              "got #{nice.inspect}"
          end

          reason = unsupported_reason
          return [yield, Outcome.new(nil, reason)] if reason

          in_thread(nice) { yield }
        end

        # @param env [Hash]
        # @return [String, nil] why a thread's priority cannot be set here
        def unsupported_reason(env = ENV)
          return "not Linux: a thread's nice value is its own only there" unless RUBY_PLATFORM.include?("linux")
          return "this Ruby has no Thread#native_thread_id" unless Thread.method_defined?(:native_thread_id)
          # Ruby 3.3's M:N threads share native threads: the nice value would
          # land on one the forking thread may run on next.
          return "RUBY_MN_THREADS=1: Ruby threads share native threads" if env["RUBY_MN_THREADS"] == "1"

          nil
        end

        private

        # The thread's value and exception reach the caller as if the block ran
        # inline. The thread checks that its id names a thread of this process
        # before setpriority: on Linux a thread id is a pid for the kernel, and
        # an id that were not ours would re-prioritize another process.
        def in_thread(nice)
          worker = Thread.new do
            Thread.current.report_on_exception = false
            outcome = lower(nice)
            [yield, outcome]
          end
          worker.value
        ensure
          # Interrupted while waiting (a signal raised in the caller): the work
          # still holds the heap; let it finish before anything else touches it.
          worker&.join if worker&.alive?
        end

        def lower(nice)
          tid = Thread.current.native_thread_id
          return Outcome.new(nil, "thread id #{tid.inspect} is not a thread of this process") unless own_thread?(tid)

          Process.setpriority(Process::PRIO_PROCESS, tid, nice)
          Outcome.new(nice, nil)
        rescue SystemCallError => e
          Outcome.new(nil, "setpriority refused: #{e.message}")
        end

        def own_thread?(tid)
          tid.is_a?(Integer) && tid.positive? && File.exist?("/proc/self/task/#{tid}")
        end
      end
    end
  end
end
