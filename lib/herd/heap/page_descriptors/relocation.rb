# frozen_string_literal: true

require_relative "layout"

module Herd
  module Heap
    module PageDescriptors
      # Moves the descriptors of a {HeapSnapshot} into fresh memory, one
      # after the other, and points everything that pointed at the old ones
      # at the new: the neighbours in the page list (and the list head), the
      # object page's first word, the sorted array, and the free-page chains.
      #
      # Two phases. {#initialize} plans: it allocates the new descriptors and
      # computes every (address, value) to write, allocating Ruby objects as
      # it likes. {#apply} only copies memory, allocates no object and runs
      # with signals blocked, so that Ruby never takes a page from the free
      # chain (or adds one) halfway through.
      #
      # The page Ruby is allocating from (its per-ractor cache points at the
      # descriptor) and the next pages of the free chain are left where they
      # are: they cover every object allocated until {#apply} is done, which
      # {#apply} checks.
      class Relocation
        # Objects the plan may allocate after the pages kept were chosen.
        ALLOCATION_BUDGET = 2_000

        # @return [Integer] descriptors moved
        attr_reader :moved
        # @return [Array<Integer>] descriptor addresses after the move
        attr_reader :placed

        # @param snapshot [HeapSnapshot]
        # @param memory [RawMemory]
        # @param allocate [#call] size -> address (malloc)
        def initialize(snapshot, memory, allocate)
          @snapshot = snapshot
          @memory = memory
          @allocated_at_start = GC.stat(:total_allocated_objects)
          keep = pages_in_use
          @old = snapshot.descriptors.reject { |descriptor| keep.key?(descriptor) }
          @new = []
          @old.each { @new << (allocate.call(Layout::DESCRIPTOR_SIZE) || raise(NoMemoryError, "malloc failed")) }
          @to = {}
          snapshot.descriptors.each { |descriptor| @to[descriptor] = descriptor }
          snapshot.tomb.each { |descriptor| @to[descriptor] = descriptor }
          @old.each_with_index { |descriptor, index| @to[descriptor] = @new[index] }
          @moved = @old.size
          @placed = snapshot.descriptors.map { |descriptor| @to[descriptor] }
          @targets = []
          @values = []
          plan_list
          plan_bodies
          plan_sorted
          @chains = [Layout::HEAP_FREE_PAGES, Layout::HEAP_POOLED_PAGES].map { |offset| snapshot.chain(offset) }
          @buffer = String.new(capacity: (@targets.size + @chains.sum(&:size) + 2) * Layout::WORD,
            encoding: Encoding::BINARY)
        end

        # Writes the plan. Allocates no Ruby object.
        # @return [void]
        def apply
          plan_chains
          @values.pack("J*", buffer: @buffer)
          if allocated > ALLOCATION_BUDGET
            raise HeapSnapshot::Mismatch, "Ruby took more than the pages kept while planning"
          end
          unless GC.stat(:heap_allocated_pages) == @snapshot.allocated
            raise HeapSnapshot::Mismatch, "the heap grew while planning"
          end

          write
        end

        # Frees the old descriptors, once {#apply} is done.
        def release(free)
          @old.each { |descriptor| free.call(descriptor) }
        end

        # Frees the new ones instead, when {#apply} refused to write.
        def discard(free)
          @new.each { |descriptor| free.call(descriptor) }
        end

        private

        # The page objects come from now, and the free chain's next pages,
        # until they hold the budget.
        def pages_in_use
          current = Layout.page_of(Fiddle.dlwrap(Object.new))
          keep = {@snapshot.word(current) => true}
          room = 0
          @snapshot.chain(Layout::HEAP_FREE_PAGES).each do |page|
            break if room >= 2 * ALLOCATION_BUDGET

            keep[page] = true
            room += @snapshot.free_slots(page)
          end
          keep
        end

        # A field is written only if its value changes: Ruby may take kept
        # pages off the free chain meanwhile, and a write that changes
        # nothing cannot undo that. Fields of moved descriptors always change
        # (the copy is made from the old one, whose neighbours moved or not).
        def plan_list
          @snapshot.descriptors.each { |descriptor| plan_node(descriptor + Layout::NODE) }
          plan_node(@snapshot.head)
        end

        def plan_node(old_node)
          new_node = node(old_node)
          plan_link(old_node, new_node, 0) # next
          plan_link(old_node, new_node, Layout::WORD) # prev
        end

        def plan_link(old_node, new_node, link)
          was = @snapshot.word(old_node + link)
          poke(new_node + link, node(was)) if new_node != old_node || node(was) != was
        end

        def node(address)
          (address == @snapshot.head) ? address : @to.fetch(address - Layout::NODE) + Layout::NODE
        end

        def plan_bodies
          @old.each_with_index { |descriptor, index| poke(@snapshot.body(descriptor), @new[index]) }
        end

        def plan_sorted
          array = @snapshot.word(@snapshot.sorted)
          @snapshot.allocated.times do |index|
            field = array + index * Layout::WORD
            was = @snapshot.word(field)
            poke(field, @to.fetch(was)) unless @to.fetch(was) == was
          end
        end

        # Read last, allocation-free: the free chain moves as Ruby allocates.
        def plan_chains
          [Layout::HEAP_FREE_PAGES, Layout::HEAP_POOLED_PAGES].each do |offset|
            field = @snapshot.heap + offset
            in_moved = false
            page = @snapshot.word(field)
            until page.zero?
              poke(field, @to.fetch(page)) if in_moved || @to.fetch(page) != page
              field = @to.fetch(page) + Layout::FREE_NEXT
              in_moved = @to.fetch(page) != page
              page = @snapshot.word(page + Layout::FREE_NEXT)
            end
          end
        end

        def poke(address, value)
          @targets << address
          @values << value
        end

        def write
          buffer = Fiddle::Pointer[@buffer].to_i
          @memory.without_signals do
            index = 0
            while index < @moved
              @memory.copy(@new[index], @old[index], Layout::DESCRIPTOR_SIZE)
              index += 1
            end
            index = 0
            while index < @targets.size
              @memory.copy(@targets[index], buffer + index * Layout::WORD, Layout::WORD)
              index += 1
            end
          end
        end

        def allocated
          GC.stat(:total_allocated_objects) - @allocated_at_start
        end
      end
    end
  end
end
