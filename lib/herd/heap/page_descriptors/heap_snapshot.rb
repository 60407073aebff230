# frozen_string_literal: true

require_relative "layout"

module Herd
  module Heap
    module PageDescriptors
      # The eden heap's pages as Ruby 3.1 links them, read (never written)
      # and cross-checked: each page's descriptor, the list they form, the
      # heap that heads the list and the sorted array that indexes them.
      # Anything that does not add up raises {Mismatch}, before anything
      # is written.
      class HeapSnapshot
        # The heap is not laid out as {Layout} says, or is busy.
        class Mismatch < StandardError; end

        # @return [Array<Integer>] descriptor addresses, in list order
        attr_reader :descriptors
        # @return [Array<Integer>] descriptors of empty pages waiting to be
        #   freed (the tomb heap): left in place
        attr_reader :tomb
        # @return [Integer] address of the eden heap (rb_heap_t)
        attr_reader :heap
        # @return [Integer] address of the sorted array of descriptors
        attr_reader :sorted

        # @param memory [RawMemory]
        # @param anchor [Object] any live object: the walk starts at its page
        def initialize(memory, anchor)
          @memory = memory
          @count = GC.stat(:heap_allocated_pages)
          walk(Layout.page_of(Fiddle.dlwrap(anchor)))
          walk_tomb
          check_heap
          @sorted = find_sorted
        end

        # @return [Integer] the list head's node (inside the heap)
        def head
          @heap + Layout::HEAP_PAGES
        end

        # @return [Integer] pages in use (the eden heap) when the snapshot was taken
        def size
          @descriptors.size
        end

        # @return [Integer] pages in the sorted array: in use and in the tomb
        def allocated
          size + @tomb.size
        end

        # Pages in a free-page chain starting at the heap's field `offset`
        # ({Layout::HEAP_FREE_PAGES} or {Layout::HEAP_POOLED_PAGES}), in order.
        def chain(offset)
          pages = []
          page = word(@heap + offset)
          until page.zero?
            raise Mismatch, "free page chain leaves the heap" unless @members.key?(page)
            raise Mismatch, "free page chain loops" if pages.size > size

            pages << page
            page = word(page + Layout::FREE_NEXT)
          end
          pages
        end

        # @return [Integer] free slots the page counts
        def free_slots(page)
          [word(page + Layout::FREE_SLOTS)].pack("J").unpack1("s")
        end

        # @return [Integer] the object page a descriptor describes
        def body(descriptor)
          Layout.page_of(word(descriptor + Layout::START))
        end

        def word(address)
          @memory.word(address)
        end

        private

        # Follows page_node.next around the ring. Every node is a page's,
        # but one: the list head inside the heap, recognized because the
        # words where a descriptor's fields would be do not point at an
        # object page that points back.
        def walk(first_body)
          first = word(first_body)
          raise Mismatch, "the object page does not point at a descriptor" unless descriptor?(first)

          @descriptors = [first]
          head = nil
          node = word(first + Layout::NODE)
          until node == first + Layout::NODE
            candidate = node - Layout::NODE
            if descriptor?(candidate)
              @descriptors << candidate
            else
              raise Mismatch, "two list heads in the page list" if head

              head = node
            end
            raise Mismatch, "the page list is longer than the heap" if @descriptors.size > @count

            node = word(node)
          end
          raise Mismatch, "no list head in the page list" unless head

          @heap = head - Layout::HEAP_PAGES
          @members = {}
          @descriptors.each { |descriptor| @members[descriptor] = true }
        end

        def walk_tomb
          head = @heap + Layout::HEAP_SIZE + Layout::HEAP_PAGES
          @tomb = []
          node = word(head)
          until node == head
            raise Mismatch, "a tomb page is not a page" unless descriptor?(node - Layout::NODE)
            raise Mismatch, "the tomb list is longer than the heap" if @tomb.size > @count

            @tomb << node - Layout::NODE
            node = word(node)
          end
          @tomb.each { |descriptor| @members[descriptor] = true }
        end

        def descriptor?(address)
          start = @memory.word_if_mapped(address + Layout::START)
          return false unless start&.positive?

          body = Layout.page_of(start)
          @memory.readable?(body) && word(body) == address
        end

        def check_heap
          total = word(@heap + Layout::HEAP_TOTAL_PAGES)
          unless total == size && allocated == @count
            raise Mismatch, "heap counts #{total} pages, its list #{size} and #{@tomb.size} in the tomb, " \
              "GC.stat #{@count}"
          end
          raise Mismatch, "a sweep or compaction is under way" unless word(@heap + Layout::HEAP_SWEEPING_PAGE).zero? &&
            word(@heap + Layout::HEAP_COMPACT_CURSOR).zero?
        end

        # The word, a little past the tomb heap, that points at an array of
        # exactly these descriptors and is followed by their count.
        def find_sorted
          from = @heap + 2 * Layout::HEAP_SIZE
          Layout::SORTED_SEARCH_WORDS.times do |index|
            field = from + index * Layout::WORD
            array = word(field)
            next unless word(field + Layout::WORD) == allocated && @memory.readable?(array) &&
              @members.key?(word(array))
            unless sorted_entries(array).all? { |page| @members.key?(page) }
              raise Mismatch, "the sorted page array holds other pages"
            end

            return field
          end
          raise Mismatch, "the sorted page array was not found"
        end

        def sorted_entries(array)
          Array.new(allocated) { |index| word(array + index * Layout::WORD) }
        end
      end
    end
  end
end
