# frozen_string_literal: true

require_relative "../clock"

module Herd
  module Cluster
    # What happened in the server so far, for `/stats`, `/metrics` and
    # `herd top`: counters, and the last reforks and reloads with why and how
    # long each took. The monitor's parts record into it (they share it
    # through the Context); the control endpoint reads it in the monitor's
    # loop, and gets copies, so that what it renders never changes under it.
    # @api private
    class Telemetry
      # The reforks and reloads kept for `/stats` (older ones are only counted).
      HISTORY = 20

      # One refork or reload: `kind` :refork or :reload, `reason` as logged,
      # `duration` seconds from the request to the new mold's ready (nil while
      # pending), `outcome` :pending, :ready or :failed.
      RolloutEntry = Struct.new(:kind, :reason, :from_generation, :generation, :started_at, :wall_time, :duration,
        :outcome, keyword_init: true)

      COUNTERS = %i[requests_retired timeouts worker_deaths_by_signal reforks reloads refork_failures reload_failures
        spawn_failures memory_limit_replacements].freeze

      def initialize
        @counters = COUNTERS.to_h { |name| [name, 0] }
        @deaths_by_signal = Hash.new(0)
        @rollouts = []
        @lock = Mutex.new
      end

      # @param name [Symbol] one of COUNTERS
      def count(name, by = 1)
        raise ArgumentError, "unknown counter #{name}" unless @counters.key?(name)

        @lock.synchronize { @counters[name] += by }
      end

      # A worker was killed by `signal` (a name without SIG).
      def worker_killed(signal)
        @lock.synchronize do
          @counters[:worker_deaths_by_signal] += 1
          @deaths_by_signal[signal] += 1
        end
      end

      # A refork or a reload began.
      # @return [RolloutEntry]
      def rollout_started(kind, reason, from_generation:, generation:)
        rollout = RolloutEntry.new(kind: kind, reason: reason, from_generation: from_generation, generation: generation,
          started_at: Clock.now, wall_time: Time.now, outcome: :pending)
        @lock.synchronize do
          @counters[(kind == :reload) ? :reloads : :reforks] += 1
          @rollouts << rollout
          @rollouts.shift while @rollouts.size > HISTORY
        end
        rollout
      end

      # The new mold of `generation` is ready (or failed).
      def rollout_ended(generation, outcome)
        @lock.synchronize do
          rollout = @rollouts.reverse.find { |r| r.generation == generation && r.outcome == :pending }
          return unless rollout

          rollout.duration = Clock.now - rollout.started_at
          rollout.outcome = outcome
          @counters[(rollout.kind == :reload) ? :reload_failures : :refork_failures] += 1 if outcome == :failed
        end
      end

      # @return [Hash{Symbol => Integer}] a copy
      def counters
        @lock.synchronize { @counters.dup }
      end

      # @return [Hash{String => Integer}] worker deaths by signal name
      def deaths_by_signal
        @lock.synchronize { @deaths_by_signal.dup }
      end

      # @return [Array<RolloutEntry>] copies, oldest first
      def rollouts
        @lock.synchronize { @rollouts.map(&:dup) }
      end
    end
  end
end
