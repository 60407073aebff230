# frozen_string_literal: true

module Herd
  module Cluster
    # Collects a worker's garbage between requests, before it spreads over
    # the mold's pages.
    #
    # A worker's new objects land in the free slots it inherited from the
    # mold, and each slot it fills copies the shared page it lies in; Ruby
    # collects only once those free slots run out. Collecting after a fixed
    # number of allocations keeps a worker's garbage in the pages it already
    # copied. When fewer free slots than that remain (counting the pages
    # Ruby may still add), Ruby's own GC is due soon anyway and nothing is
    # done. The runs behind the defaults: docs/COPY_ON_WRITE.md, "A worker's
    # garbage" and "What a Rails worker's memory is made of".
    # @api private
    class OutOfBandGC
      # Allocations between two GCs by default: a few requests of a Rails
      # app, so its garbage stays in a few pages.
      DEFAULT_OBJECTS = 10_000
      # Requests between two of our GCs at least: a minor GC costs about the
      # same whatever it frees, so an app that allocates more than the budget
      # per request must not collect after every one.
      MIN_REQUESTS = 4
      # Ruby <= 3.3 counts the pages it may still add before its next GC.
      SLOTS_PER_PAGE = GC::INTERNAL_CONSTANTS.fetch(:HEAP_PAGE_OBJ_LIMIT, 409)
      # How this Ruby's GC.stat counts them, and in how many slots each.
      ALLOCATABLE_KEY, ALLOCATABLE_UNIT =
        GC.stat.key?(:heap_allocatable_slots) ? [:heap_allocatable_slots, 1] : [:heap_allocatable_pages, SLOTS_PER_PAGE]

      # Whether GC.latest_gc_info says if the next GC is a major one.
      NEED_MAJOR_KNOWN = GC.latest_gc_info.key?(:need_major_by)
      # GCs of ours that left a major GC due, after which it stops, when
      # they are also MISFIRE_SHARE of its GCs or more: one may come from
      # the heap's own growth, and a long-lived worker meets a few; more,
      # and that often, say the heap is too tight for it.
      MISFIRES = 2
      MISFIRE_SHARE = 0.1

      # @return [Integer] GCs run so far
      attr_reader :runs

      # @param objects [Integer] allocations since the last GC (Ruby's or ours) that call for one
      # @param min_requests [Integer] requests since the last GC (Ruby's or ours) before one of ours
      # @param gc [#stat, #count, #start] the GC (tests pass a stand-in)
      def initialize(objects, min_requests: MIN_REQUESTS, gc: GC)
        @objects = objects
        @min_requests = min_requests
        @gc = gc
        @runs = 0
        @misfires = 0
        @stood_down = false
        remember
      end

      # Call between requests.
      # @return [Boolean] whether it ran a GC
      def between_requests
        if @gc.count != @count # Ruby collected: count from there
          remember
          return false
        end
        return false if stood_down?

        @requests += 1
        return false if @requests < @min_requests
        return false if @gc.stat(:total_allocated_objects) - @allocated < @objects
        return false if room < @objects

        collect
        true
      end

      # Whether it has stopped for good in this process: its GCs kept
      # leaving Ruby's next GC a major one ({MISFIRES}, {MISFIRE_SHARE}).
      # @return [Boolean]
      def stood_down?
        @stood_down
      end

      private

      # A minor GC that leaves fewer free slots than Ruby's minimum ratio
      # (RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO) makes Ruby's next GC a major
      # one, and on a heap that stays that tight, one GC of ours in a few
      # turns into a major GC: far more CPU than the copies it saves.
      def collect
        @gc.start(full_mark: false, immediate_sweep: true)
        @runs += 1
        @misfires += 1 if major_due?
        @stood_down ||= @misfires >= MISFIRES && @misfires >= @runs * MISFIRE_SHARE
        remember
      end

      # Ruby >= 3.3 says when its next GC will be a major one.
      def major_due?
        NEED_MAJOR_KNOWN && !@gc.latest_gc_info(:need_major_by).nil?
      end

      # Objects Ruby lets in before its own next GC: free slots, and the
      # slots of the pages it may still add (Ruby 3.4 counts those in
      # slots, earlier versions in pages).
      # (One key at a time: GC.stat without one builds a Hash of 40 entries,
      # and while room stays short this runs after every request.)
      def room
        @gc.stat(:heap_free_slots) + @gc.stat(ALLOCATABLE_KEY) * ALLOCATABLE_UNIT
      end

      def remember
        @requests = 0
        @count = @gc.count
        @allocated = @gc.stat(:total_allocated_objects)
      end
    end
  end
end
