# frozen_string_literal: true

require_relative "../clock"
require_relative "malloc"
require_relative "page_descriptors/layout"
require_relative "page_descriptors/raw_memory"
require_relative "page_descriptors/heap_snapshot"
require_relative "page_descriptors/relocation"

module Herd
  module Heap
    # Packs the GC's page descriptors together, so that a fork's first GC
    # copies a few hundred KiB of them instead of a quarter of the heap.
    #
    # Ruby 3.1 keeps the mark bitmaps of each 16 KiB object page in a
    # 344-byte struct it mallocs when the page is added, one at a time as the
    # heap grows, between everything else the program mallocs. Each ends up
    # alone in a 4 KiB page of long-lived data, and every GC writes every one
    # of them: a worker's first GC copies one 4 KiB page per object page, a
    # quarter of the object heap. {.pack} moves them into fresh memory, next
    # to each other, so that the first GC copies a few hundred KiB of them,
    # and repoints what pointed at them; Ruby frees them as before when it
    # frees a page. The figures: docs/COPY_ON_WRITE.md, "GC metadata: mark
    # bitmaps and the mark stack".
    #
    # This rewrites the GC's own structures, so it is done only where their
    # layout is known and checks out: CRuby 3.1 (64-bit, stock GC constants)
    # with glibc's malloc, one thread, no GC under way; the page list, the
    # heap that heads it and the sorted page array must agree before anything
    # is written. Otherwise it does nothing and says why. Ruby 3.2 and later
    # use 64 KiB object pages (four times fewer descriptors) and are left as
    # they are.
    # @api private
    module PageDescriptors
      # What {.pack} did.
      # @!attribute descriptors
      #   @return [Integer] object pages (one descriptor each)
      # @!attribute moved
      #   @return [Integer] descriptors moved (a few in use are left in place)
      # @!attribute pages_before / pages_after
      #   @return [Integer] 4 KiB pages the descriptors lay in
      # @!attribute skipped
      #   @return [String, nil] why nothing was moved
      # @!attribute duration
      #   @return [Float] seconds
      Packed = Struct.new(:descriptors, :moved, :pages_before, :pages_after, :skipped, :duration, keyword_init: true) do
        # @return [String] one line for logs
        def to_s
          return "GC page descriptors left in place: #{skipped}" if skipped

          format("%d GC page descriptors packed: %d -> %d pages of memory, %.1f ms",
            moved, pages_before, pages_after, duration * 1000)
        end

        # @return [Boolean] whether any descriptor moved
        def packed?
          !skipped && moved.positive?
        end
      end

      # Descriptors already within this many times their smallest footprint
      # stay where they are: packing again would gain next to nothing.
      DENSE_ENOUGH = 2
      MEMORY_PAGE = 4096
      # Free slots wanted before starting: what the snapshot and the plan
      # allocate must not make Ruby add a page (and a descriptor) meanwhile.
      ROOM = 8 * Relocation::ALLOCATION_BUDGET
      # Fewer than this after {.make_room}, and nothing is tried.
      LEAST_ROOM = 3 * Relocation::ALLOCATION_BUDGET

      class << self
        # @return [String, nil] why {.pack} cannot run in this Ruby, nil if it can
        def unsupported
          Layout.mismatch ||
            (Malloc.available? ? nil : "#{Malloc.unsupported} (other allocators keep same-size blocks together)")
        end

        # Moves the page descriptors into consecutive fresh memory. Call it
        # in a process about to fork, after its last GC, before
        # {Malloc.seal_free_chunks} (which then takes the old descriptors'
        # chunks, freed here, out of the children's reach). Runs a minor GC
        # first if free slots are short or a lazy sweep is under way.
        # @return [Packed]
        def pack
          started = clock
          reason = unsupported
          return skipped(reason, started) if reason

          make_room
          reason = busy
          return skipped(reason, started) if reason

          was_disabled = GC.disable
          begin
            relocate(started)
          ensure
            GC.enable unless was_disabled
          end
        end

        # @param reason [String] why nothing moves
        # @return [Packed] a packing that did not happen
        def skipped(reason, started = clock)
          Packed.new(descriptors: 0, moved: 0, pages_before: 0, pages_after: 0, skipped: reason,
            duration: clock - started)
        end

        private

        def relocate(started)
          memory = RawMemory.new
          snapshot = HeapSnapshot.new(memory, memory)
          before = spread(snapshot.descriptors)
          if before <= DENSE_ENOUGH * smallest(snapshot.size)
            return skipped("already packed (#{before} pages of memory)", started)
          end

          relocation = Malloc.from_fresh_memory { plan(snapshot, memory) }
          begin
            relocation.apply
          rescue HeapSnapshot::Mismatch
            relocation.discard(Malloc.method(:release))
            raise
          end
          relocation.release(Malloc.method(:release))
          Packed.new(descriptors: snapshot.size, moved: relocation.moved, pages_before: before,
            pages_after: spread(relocation.placed), duration: clock - started)
        rescue HeapSnapshot::Mismatch => e
          skipped(e.message, started)
        end

        # Right after a GC, Ruby may have no free slot at all (it adds pages
        # as objects need them): a little garbage and a minor GC make some.
        # A lazy sweep still under way is finished by the same GC.
        def make_room
          return if GC.latest_gc_info(:state) == :none && GC.stat(:heap_free_slots) >= ROOM

          ROOM.times { Object.new } # held by nothing, not even an Array on the stack
          GC.start(full_mark: false, immediate_sweep: true)
        end

        # A page added since the snapshot (Ruby grows the heap when an
        # object finds no free slot) leaves the plan pointing at nothing: it
        # is dropped, nothing written.
        def plan(snapshot, memory)
          Relocation.new(snapshot, memory, Malloc.method(:allocate))
        rescue KeyError
          grown = GC.stat(:heap_allocated_pages) - snapshot.allocated
          raise HeapSnapshot::Mismatch, "the heap changed while planning (#{grown} pages added), " \
            "free slots #{GC.stat(:heap_free_slots)}"
        end

        def busy
          others = Thread.list.count { |thread| thread != Thread.current && thread.alive? }
          return "#{others} other thread#{"s" unless others == 1} alive" if others.positive?
          return "#{Ractor.count} ractors" if defined?(Ractor) && Ractor.count > 1
          return "a GC is under way (#{GC.latest_gc_info(:state)})" unless GC.latest_gc_info(:state) == :none
          return "too few free slots (#{GC.stat(:heap_free_slots)})" if GC.stat(:heap_free_slots) < LEAST_ROOM

          nil
        end

        def spread(descriptors)
          descriptors.flat_map { |address|
            [address / MEMORY_PAGE, (address + Layout::DESCRIPTOR_SIZE - 1) / MEMORY_PAGE]
          }.uniq.size
        end

        def smallest(count)
          (count * Layout::DESCRIPTOR_SIZE + MEMORY_PAGE - 1) / MEMORY_PAGE
        end

        def clock
          Clock.now
        end
      end
    end
  end
end
