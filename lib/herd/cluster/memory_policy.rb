# frozen_string_literal: true

module Herd
  module Cluster
    # What the server does about memory it measured (`refork_when`,
    # `worker_memory_limit`): a decision from samples, carried out by the
    # monitor. No process, no clock: tested with numbers alone.
    #
    # `refork_when` is edge-triggered per generation: a generation whose
    # workers meet the condition from their first sample (an app whose
    # baseline is over the budget) is never reforked for it, since the next
    # generation would start the same; the policy says so once instead of
    # reforking in a loop.
    # @api private
    class MemoryPolicy
      MIB = 1024 * 1024
      CONDITIONS = %i[shared_below uss_above].freeze

      # One worker and its latest sample.
      Measured = Struct.new(:child, :sample)

      # @param refork_when [Hash, nil] shared_below: 0..1 (Σ shared / Σ RSS of
      #   the current generation's workers), uss_above: MiB (Σ USS of them)
      # @param worker_memory_limit [Numeric, nil] MiB of USS per worker
      def initialize(refork_when: nil, worker_memory_limit: nil)
        @refork_when = refork_when || {}
        @limit = worker_memory_limit
        @armed = {}
      end

      # @return [Boolean] whether there is anything to measure for
      def active?
        !@refork_when.empty? || !@limit.nil?
      end

      # @param generation [Integer] the current generation
      # @param workers [Array<Measured>] its ready workers, each sampled
      # @return [String, nil] why to refork now; nil: not now
      # @yieldparam note [String] a generation that starts over the threshold (once)
      def refork_reason(generation, workers)
        return nil if @refork_when.empty? || workers.empty?

        reason = eroded(workers)
        if reason.nil?
          @armed[generation] = true
        elsif !@armed.key?(generation)
          @armed[generation] = false
          if block_given?
            yield "refork_when: generation #{generation} starts with #{reason}; reforking would not help " \
              "(its successor would start the same), so it will not be reforked for memory"
          end
        end
        @armed.delete_if { |gen, _| gen < generation }
        @armed[generation] ? reason : nil
      end

      # @param workers [Array<Measured>] ready workers, each sampled
      # @return [Array<Measured>] those whose USS is over worker_memory_limit
      def over_limit(workers)
        return [] unless @limit

        workers.select { |measured| measured.sample.uss > @limit * MIB }
      end

      # @return [String] "312.4 MiB"
      def self.mib(bytes)
        format("%.1f MiB", bytes.fdiv(MIB))
      end

      private

      # @return [String, nil] the condition met, as the log says it
      def eroded(workers)
        samples = workers.map(&:sample)
        if (threshold = @refork_when[:shared_below])
          rss = samples.sum(&:rss)
          shared = rss.positive? ? samples.sum(&:shared).fdiv(rss) : 1.0
          if shared < threshold
            return format("workers %.0f%% shared, below shared_below %.0f%%", shared * 100, threshold * 100)
          end
        end
        if (budget = @refork_when[:uss_above])
          uss = samples.sum(&:uss)
          return "workers' USS #{self.class.mib(uss)}, above uss_above #{budget} MiB" if uss > budget * MIB
        end
        nil
      end
    end
  end
end
