# frozen_string_literal: true

require_relative "../clock"
require_relative "backoff"

module Herd
  module Cluster
    # When to try again after a child failed: a mold that did not boot (the
    # server gives up after MAX_BOOT_FAILURES in a row), a mold that died
    # after booting, a worker that died before it was ready. Each waits a
    # pause that grows while the failures go on; workers keep serving
    # meanwhile.
    # @api private
    class Recovery
      MAX_BOOT_FAILURES = 3

      def initialize
        @boot = Backoff.new(base: 0.5, max: 10)
        @mold_deaths = Backoff.new(base: 0.1, max: 10)
        @workers = Backoff.new(base: 0.1, max: 10)
        @next_mold_at = 0.0
        @next_worker_at = 0.0
      end

      # @return [Boolean] whether a new mold may be spawned now
      def mold_due?
        Clock.now >= @next_mold_at
      end

      # @return [Boolean] whether new workers may be spawned now
      def workers_due?
        Clock.now >= @next_worker_at
      end

      # A mold failed to boot.
      # @return [Float, nil] seconds until the next attempt; nil: give up
      def mold_failed
        delay = @boot.failure!
        return nil if @boot.failures >= MAX_BOOT_FAILURES

        @next_mold_at = Clock.now + delay
        delay
      end

      # @return [Integer] boots failed in a row
      def boot_failures
        @boot.failures
      end

      # A mold died after booting.
      # @return [Float] seconds until it is replaced
      def mold_died
        delay = @mold_deaths.failure!
        @next_mold_at = Clock.now + delay
        delay
      end

      # A worker died before it was ready.
      def worker_failed
        @next_worker_at = Clock.now + @workers.failure!
      end

      # A child said it is ready: its kind of failure starts over.
      def ready(child)
        if child.mold?
          @boot.reset
        else
          @workers.reset
          @mold_deaths.reset
        end
      end
    end
  end
end
