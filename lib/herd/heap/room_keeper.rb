# frozen_string_literal: true

require_relative "room"

module Herd
  module Heap
    # Watches a worker's heaps for the major GCs Ruby starts because one of
    # them has too few free slots (GC.stat_heap's force_major_gc_count), and
    # gives that heap room ({Room.grow}) at the first: Ruby itself grows a
    # heap only when a major GC leaves it that short, and a heap whose major
    # GCs free just enough runs one every few minor GCs for as long as the
    # worker lives (docs/COPY_ON_WRITE.md, "Room for the children"). The
    # worker's next mold inherits the room with the rest of its heap.
    # @api private
    class RoomKeeper
      # Seconds between two looks.
      INTERVAL = 1.0

      # @return [Integer] free slots added so far
      attr_reader :added

      # @return [RoomKeeper, nil] nil where {Room} steps aside
      def self.start
        Room.unsupported ? nil : new
      end

      def initialize
        @seen = forced
        @looked_at = nil
        @added = 0
      end

      # Between units of work.
      # @param now [Float] monotonic seconds
      # @return [String, nil] what it added, for the log; nil when nothing
      def check(now)
        return nil if @looked_at && now - @looked_at < INTERVAL

        @looked_at = now
        counts = forced
        tight = counts.each_index.select { |index| counts[index] > @seen.fetch(index, 0) }
        @seen = counts
        return nil if tight.empty?

        made = Room.grow(tight)
        @added += made.slots
        @seen = forced
        (made.slots.positive? || made.misfit) ? describe(made, tight) : nil
      end

      private

      # Major GCs each heap has made Ruby start, since the process started
      # (a forked child inherits its parent's counts).
      def forced
        GC.stat_heap.values.map { |heap| heap[:force_major_gc_count] }
      end

      def describe(made, tight)
        sizes = tight.map { |index| "#{GC.stat_heap(index, :slot_size)}-byte" }.join(", ")
        "#{made.misfit || "#{made.slots} free slots added to the heap of #{sizes} slots"}: " \
          "a major GC started because it had too few free"
      end
    end
  end
end
