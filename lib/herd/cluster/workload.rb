# frozen_string_literal: true

require_relative "../clock"

module Herd
  module Cluster
    # What the monitor knows of a worker's requests: from the shared
    # scoreboard when the worker has a slot (no message per request), from
    # what its link said otherwise.
    # @api private
    class Workload
      # @param scoreboard [Scoreboard, nil]
      def initialize(scoreboard)
        @scoreboard = scoreboard
      end

      # Before spawning a worker on `slot`: the slot starts empty.
      def reset(slot)
        @scoreboard.reset(slot) if slot?(slot)
      end

      # @return [Integer] requests served by the worker
      def requests(child)
        slot?(child.slot) ? @scoreboard.requests(child.slot) : child.requests.to_i
      end

      # @return [Array(Float, String), nil] seconds since the request in
      #   flight started and its request line; nil when idle
      def current(child)
        return @scoreboard.current(child.slot) if slot?(child.slot)

        [Clock.now - child.busy_since, child.busy_with] if child.busy_since
      end

      # A stopping worker finishes the request it is on, within `timeout`
      # too: one stuck there would hold its memory (and in a rollout, its
      # place) until the server stops. One killed already is left alone.
      # @return [String, nil] the request line of a request past `timeout`
      def overdue(child, timeout)
        return nil if !timeout || !child.worker? || child.killed || !(child.ready? || child.state == :stopping)

        elapsed, label = current(child)
        label if elapsed && elapsed > timeout
      end

      private

      def slot?(slot)
        (slot && @scoreboard&.covers?(slot)) || false
      end
    end
  end
end
