# frozen_string_literal: true

module Bench
  # The benchmarks' one clock. Spans are measured on CLOCK_MONOTONIC, which
  # NTP's adjustments of the wall clock cannot bend, and CPU on the calling
  # process's own CPU clock; a driver and the clients it forks read the same
  # monotonic clock, so their timestamps compare.
  module Clock
    module_function

    # @return [Float] seconds on CLOCK_MONOTONIC
    def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

    # @return [Float] CPU seconds (user + system) this process has used
    def cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)

    # @return [Float] the seconds the block took
    def seconds
      started = now
      yield
      now - started
    end
  end
end
