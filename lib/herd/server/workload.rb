# frozen_string_literal: true

require_relative "../clock"

module Herd
  module Server
    # What the monitor knows of a worker's requests: from the shared
    # scoreboard when the worker has a slot (no message per request), from
    # what its link said otherwise.
    # @api private
    class Workload
      # @param scoreboard [Scoreboard, nil]
      def initialize(scoreboard)
        @scoreboard = scoreboard
      end

      # Before spawning worker `number`: its slot starts empty.
      def reset(number)
        @scoreboard.reset(number) if slot?(number)
      end

      # @return [Integer] requests served by the worker
      def requests(child)
        slot?(child.number) ? @scoreboard.requests(child.number) : child.requests.to_i
      end

      # @return [Array(Float, String), nil] seconds since the request in
      #   flight started and its request line; nil when idle
      def current(child)
        return @scoreboard.current(child.number) if slot?(child.number)

        [Clock.now - child.busy_since, child.busy_with] if child.busy_since
      end

      # @return [String, nil] the request line of a request past `timeout`
      def overdue(child, timeout)
        return nil unless child.worker? && child.ready?

        elapsed, label = current(child)
        label if elapsed && elapsed > timeout
      end

      private

      def slot?(number)
        @scoreboard&.covers?(number) || false
      end
    end
  end
end
