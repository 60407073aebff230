# frozen_string_literal: true

module Herd
  class Pool
    # Decides how many items go in the next batch.
    #
    # Tiny items must travel in large batches or the round trip dominates (as
    # with the parallel gem, which sends one item per message: docs/POOL.md,
    # "Costs"); slow items must travel in small ones so the last batches don't
    # leave cores idle. So: start with one item, measure the time per item as
    # the worker spent it (the round trip is what batching amortizes: counted
    # in, it kept slow-ish items in batches of one), and aim for batches of
    # about {TARGET_SECONDS}, never more than an even share of what remains.
    # @api private
    class ChunkSizer
      TARGET_SECONDS = 0.01
      MAX = 4096
      # The most one batch's time per item may weigh, in estimates.
      OUTLIER = 4

      # @param fixed [Integer, nil] the user's chunk_size:, used as is
      # @param total [Integer, Float, nil] items in the source, when known
      # @param workers [Integer]
      def initialize(fixed:, total:, workers:)
        @fixed = fixed
        # Infinity (an endless range's size) is no count to share out.
        @total = total.is_a?(Integer) ? total : nil
        @workers = [workers, 1].max
        @per_item = nil
      end

      # @param handed_out [Integer] items dispatched so far
      # @return [Integer]
      def next_size(handed_out)
        return @fixed if @fixed

        size = @per_item ? (TARGET_SECONDS / @per_item).floor : 1
        size.clamp(1, limit(handed_out))
      end

      # @return [Boolean] whether a finished batch has told the time per item
      def estimated?
        !@per_item.nil?
      end

      # Learns from a finished batch. A sample counts for at most
      # {OUTLIER} times the estimate: one slow batch (a worker's first
      # garbage collection and copy-on-write faults, many times the item's
      # own time; docs/POOL.md, "Cost per call") had kept batches at one
      # item, and a round trip each, for a dozen more. Items that really got
      # slower still nearly double the estimate per batch.
      def record(items, seconds)
        return if items.zero?

        sample = seconds / items
        @per_item = @per_item ? (@per_item * 0.7) + ([sample, @per_item * OUTLIER].min * 0.3) : sample
      end

      private

      def limit(handed_out)
        return MAX unless @total

        # Leave about two batches per worker for the tail, so the slowest
        # batch is a small one.
        remaining = [@total - handed_out, 1].max
        (remaining.to_f / (@workers * 2)).ceil.clamp(1, MAX)
      end
    end
  end
end
