# frozen_string_literal: true

module Herd
  # Monotonic seconds: deadlines and durations never jump with the wall clock.
  # @api private
  module Clock
    # @return [Float]
    def self.now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
