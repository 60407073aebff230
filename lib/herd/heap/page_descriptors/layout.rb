# frozen_string_literal: true

module Herd
  module Heap
    module PageDescriptors
      # Where Ruby 3.1 keeps what {PageDescriptors.pack} moves (gc.c of 3.1.x,
      # 64-bit, one size pool, incremental marking compiled in, as every
      # stock build): `struct heap_page`, the descriptor of a 16 KiB object
      # page; `rb_heap_t`, the eden heap that lists them; and the first word
      # of every object page, which points back at its descriptor.
      module Layout
        WORD = 8
        # struct heap_page: shorts first, then pointers, then five bitmaps
        FREE_SLOTS = 4 # short free_slots
        FREE_NEXT = 24 # struct heap_page *free_next
        START = 32 # RVALUE *start (the first slot, inside the object page)
        NODE = 48 # struct list_node page_node {next, prev}
        BITMAPS = 64
        BITMAP_COUNT = 5 # wb_unprotected, mark, uncollectible, marking, pinned
        # rb_heap_t, from its start (the eden heap's list head is at PAGES)
        HEAP_FREE_PAGES = 0
        HEAP_PAGES = 8
        HEAP_SWEEPING_PAGE = 24
        HEAP_COMPACT_CURSOR = 32
        HEAP_POOLED_PAGES = 48
        HEAP_TOTAL_PAGES = 56
        HEAP_SIZE = 72 # the tomb heap follows the eden heap
        # heap_pages.sorted is a little further into rb_objspace: searched
        # for, and recognized by the page count that follows it
        SORTED_SEARCH_WORDS = 64

        CONSTANTS = defined?(GC::INTERNAL_CONSTANTS) ? GC::INTERNAL_CONSTANTS : {}.freeze
        PAGE_SIZE = CONSTANTS[:HEAP_PAGE_SIZE]
        DESCRIPTOR_SIZE = BITMAPS + BITMAP_COUNT * CONSTANTS[:HEAP_PAGE_BITMAP_SIZE].to_i

        # @return [String, nil] why this Ruby's layout is not the one above
        def self.mismatch
          unless RUBY_ENGINE == "ruby" && RUBY_VERSION.start_with?("3.1.")
            return "#{RUBY_ENGINE} #{RUBY_VERSION}: only CRuby 3.1 keeps GC bitmaps this way"
          end
          return "not a 64-bit Ruby" unless [nil].pack("p").bytesize == WORD
          return "GC constants differ from a stock 3.1 build: #{CONSTANTS.inspect}" unless stock_constants?

          nil
        end

        def self.stock_constants?
          CONSTANTS[:SIZE_POOL_COUNT] == 1 && PAGE_SIZE == 16_384 && CONSTANTS[:RVALUE_SIZE] == 40 &&
            CONSTANTS[:HEAP_PAGE_BITMAP_SIZE] == 56 && !CONSTANTS[:DEBUG]
        end

        # @return [Integer] the object page (16 KiB aligned) an address lies in
        def self.page_of(address)
          address & -PAGE_SIZE
        end
      end
    end
  end
end
