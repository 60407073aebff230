# frozen_string_literal: true

module Herd
  module Heap
    # How many objects the heap held when it was last compacted, in this
    # process or in the one it was forked from: a child inherits the record
    # with the rest of its memory, so a mold promoted from a worker knows
    # whether its heap descends from a compacted one. Such a heap is dense
    # but for what the worker added since, and compacting it again writes
    # every page of it to gather only that: many copy-on-write faults for
    # little memory back (docs/REFORKING.md, "What a refork costs, step by
    # step"). `Heap.prepare(compact: :auto)` compacts when there is no
    # record, or once the live objects have grown by {GROWTH} since it.
    # @api private
    module LastCompaction
      # Share of new live objects past which `compact: :auto` compacts again.
      GROWTH = 0.1

      @live = nil

      class << self
        # Notes the heap as it is now, right after a compaction.
        def record
          @live = GC.stat(:heap_live_slots)
        end

        # @return [Float, nil] the live objects' growth since the last
        #   compaction (0.02 for 2%), nil when the heap never was compacted
        def growth
          @live && (GC.stat(:heap_live_slots) - @live).fdiv(@live)
        end

        # @return [String, nil] why compacting now pays, nil when it does not
        def due
          grown = growth
          return "never compacted" unless grown
          return nil if grown < GROWTH

          format("%+.1f%% live objects since the last compaction", grown * 100)
        end

        # @return [String] why `compact: :auto` skipped compaction
        def skipped
          format("compaction not needed (%+.1f%% live objects since the last, %d%% or more compacts)",
            growth.to_f * 100, (GROWTH * 100).round)
        end
      end
    end
  end
end
