# frozen_string_literal: true

require_relative "../ruby_gc_settings"

module Herd
  module Heap
    # Free slots a template leaves its children.
    #
    # Ruby starts a major GC when a minor one leaves a heap with fewer free
    # slots than RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO of it, and grows the heap
    # only when a major GC leaves it that short. The GCs that prepare a
    # template leave it little more than that minimum. In each child, the
    # objects its work keeps across a few GCs take the rest, and from then on
    # a major GC runs every few minor ones, in every child, for as long as
    # it lives, while none of them grows the heap: each major GC frees
    # enough to stay above the minimum (docs/COPY_ON_WRITE.md, "Room for the
    # children").
    #
    # This adds empty pages to each of the template's heaps (one per slot
    # size) until the share Ruby's own growth aims at
    # (RUBY_GC_HEAP_FREE_SLOTS_GOAL_RATIO) is free, staying short of the share
    # past which a GC gives pages back (RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO).
    # The pages cost the template their memory, shared; a child copies
    # only those it allocates in, where it would otherwise have run a GC.
    # @api private
    module Room
      # How far from the minimum free share towards the one past which a GC
      # gives pages back the room goes: not all the way, so that what the
      # template allocates before it forks does not cross it.
      TOWARDS_MAX = 0.8
      # Bytes of an Array's header, before the elements it embeds.
      ARRAY_HEADER = 16
      # Why this Ruby gets no room ({Room.unsupported}). Before 3.4, Ruby
      # counts the pages a heap may add without a GC, and a GC does not
      # reset that count: the room's pages would stay allowed to every
      # child, which then grows instead of collecting.
      UNSUPPORTED = if !GC.respond_to?(:stat_heap)
        "no GC.stat_heap before Ruby 3.2"
      elsif !GC.stat.key?(:heap_allocatable_slots)
        "Ruby < 3.4 counts the pages a heap may add in pages, which its GCs do not reset"
      end

      # What {Room.make} did.
      #
      # @!attribute slots
      #   @return [Integer] free slots added
      # @!attribute free_ratio
      #   @return [Float, nil] the share of the heap free afterwards
      # @!attribute min_ratio
      #   @return [Float, nil] Ruby's minimum (RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO)
      # @!attribute gc_runs
      #   @return [Integer] GCs run (one frees the objects that made the pages)
      # @!attribute stepped_aside
      #   @return [String, nil] why this Ruby gets none ({Room.unsupported})
      # @!attribute misfit
      #   @return [String, nil] why it stopped short: the objects meant for
      #     one heap landed in another
      Made = Struct.new(:slots, :free_ratio, :min_ratio, :gc_runs, :stepped_aside, :misfit, keyword_init: true) do
        # @return [String, nil] a clause for the preparation's log line, nil
        #   when there is nothing to say
        def to_s
          return "room for the children stopped short: #{misfit}" if misfit
          return nil if stepped_aside || slots.zero?

          format("room for the children: %d free slots added (%d%% of the heap free, Ruby's minimum %d%%)",
            slots, (free_ratio * 100).round, (min_ratio * 100).round)
        end
      end

      class << self
        # Every heap of this process, up to {target_ratio} free, and all
        # of them together too: in a template, before it forks.
        # @param env [Hash] for the GC settings the user gave
        # @return [Made]
        def make(env = ENV)
          reason = unsupported
          return Made.new(slots: 0, gc_runs: 0, stepped_aside: reason) if reason

          min, goal, max = RubyGCSettings.free_slot_ratios(env)
          target = target_ratio(min, goal, max)
          # The small heaps keep more free than that: counted, the whole
          # stays short of Ruby's maximum too.
          budget = budget(target, GC.stat(:heap_available_slots), GC.stat(:heap_free_slots))
          return Made.new(slots: 0, gc_runs: 0, min_ratio: min) unless budget.positive?

          add(GC.stat_heap.keys.to_h { |index| [index, target] }, budget, min)
        end

        # The heaps a major GC was forced by, up to Ruby's goal free (where
        # Ruby's own growth stops), within what keeps the whole short of the
        # share past which a GC gives pages back: in a worker whose heap is
        # too tight for its work ({RoomKeeper}).
        # @param indexes [Array<Integer>] heaps, as GC.stat_heap numbers them
        # @return [Made]
        def grow(indexes, env = ENV)
          reason = unsupported
          return Made.new(slots: 0, gc_runs: 0, stepped_aside: reason) if reason

          min, goal, max = RubyGCSettings.free_slot_ratios(env)
          cap = target_ratio(min, goal, max)
          stat = GC.stat
          total = stat[:heap_available_slots]
          # What the last GC left free: what this moment's allocations took is coming back.
          budget = budget(cap, total, total - [stat[:heap_marked_slots], total].min)
          return Made.new(slots: 0, gc_runs: 0, min_ratio: min) unless budget.positive?

          add(indexes.to_h { |index| [index, goal.zero? ? cap : goal] }, budget, min)
        end

        # The free share to leave: Ruby's goal, short of the maximum.
        # @return [Float]
        def target_ratio(min, goal, max)
          below_max = min + (max - min) * TOWARDS_MAX
          goal.zero? ? below_max : [goal, below_max].min
        end

        # @return [String, nil] why this Ruby gets no room, nil when it does
        def unsupported
          UNSUPPORTED
        end

        private

        # New slots that leave at most `cap` of all the heaps' slots free.
        # @return [Integer]
        def budget(cap, total, free)
          ((cap * total - free) / (1 - cap)).floor
        end

        # @param targets [Hash{Integer => Float}] the free share each heap should reach
        # @param budget [Integer] at most this many new slots in all
        def add(targets, budget, min)
          before = GC.stat(:heap_available_slots)
          fillers = []
          misfit = nil
          targets.each do |index, target|
            made, misfit, budget = fill(index, target, budget)
            break if misfit

            fillers << made if made
          end
          added = GC.stat(:heap_available_slots) - before
          runs = 0
          unless fillers.empty?
            fillers.clear # their objects become garbage for the GC below
            runs = collect
          end
          Made.new(slots: added, free_ratio: GC.stat(:heap_free_slots).fdiv(GC.stat(:heap_available_slots)),
            min_ratio: min, gc_runs: runs, misfit: misfit)
        end

        # Makes the objects that take heap `index`'s free slots and then
        # enough new pages, with the GC off so that Ruby adds the pages.
        # @return [Array] the objects (nil when none were needed), why they
        #   did not land in that heap (nil when they did), the budget left
        def fill(index, target, budget)
          heap = GC.stat_heap(index)
          total = heap[:heap_eden_slots]
          free = total - (heap[:total_allocated_objects] - heap[:total_freed_objects])
          wanted = total.zero? ? 0 : [((total * target - free) / (1 - target)).ceil, budget].min
          return [nil, nil, budget] unless wanted.positive?

          count = free + wanted
          made = with_gc_off { Array.new(count) { filler(heap[:slot_size], index) } }
          landed = GC.stat_heap(index, :total_allocated_objects) - heap[:total_allocated_objects]
          budget -= wanted
          return [made, nil, budget] if landed >= count

          [nil, "objects made for the heap of #{heap[:slot_size]}-byte slots landed elsewhere (#{landed} of #{count})", budget]
        end

        # An object that takes one slot of `slot_size` bytes: a plain one in
        # the smallest, an Array embedding as many elements as fit elsewhere.
        def filler(slot_size, index)
          index.zero? ? Object.new : Array.new((slot_size - ARRAY_HEADER) / 8)
        end

        # The fillers, dropped, are young: a minor GC frees them, and
        # their pages stay, empty.
        # @return [Integer] GC runs
        def collect
          GC.start(full_mark: false, immediate_sweep: true)
          1
        end

        def with_gc_off
          was_disabled = GC.disable
          yield
        ensure
          GC.enable unless was_disabled
        end
      end
    end
  end
end
