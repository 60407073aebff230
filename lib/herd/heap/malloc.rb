# frozen_string_literal: true

require "fiddle"

module Herd
  module Heap
    # What glibc's malloc leaves behind in a process about to fork children.
    #
    # Booting an app frees a lot of C memory (parser nodes, temporary strings),
    # which glibc keeps as free chunks spread over pages the mold shares with
    # every worker. A worker's `malloc` reuses those chunks first, and each
    # reuse writes a chunk header into a shared page, which copies the page,
    # request after request (docs/COPY_ON_WRITE.md, "malloc's free chunks",
    # has the figures). {.seal_free_chunks} takes every free chunk in the
    # forking process for good, so a child's allocations come from fresh
    # memory of its own, and gives the pages inside them back to the kernel,
    # so they cost nothing either.
    #
    # The sealed chunks stay taken until {Sealed#unseal} frees them. A
    # process that forks again and again (Herd.map in a loop) must unseal
    # once the children it sealed for are gone: every seal takes the free
    # chunks of its time, and the memory the process frees meanwhile is never
    # reused, so its heap grows by what it churned between two seals.
    #
    # glibc only (the main arena, which the main thread uses); elsewhere, or
    # with another allocator preloaded (jemalloc, tcmalloc), {.available?} is
    # false, {.unsupported} says why, and every method does nothing.
    # @api private
    module Malloc
      # What {.seal_free_chunks} did.
      # @!attribute chunks
      #   @return [Integer] free chunks taken
      # @!attribute bytes
      #   @return [Integer] bytes asked for (a chunk may hold a few more)
      # @!attribute released
      #   @return [Integer] bytes of whole pages inside them given back to the kernel
      # @!attribute skipped
      #   @return [String, nil] why nothing was sealed (another allocator, the
      #     HERD_HEAP_INTERNALS switch)
      Sealed = Struct.new(:chunks, :bytes, :released, :skipped, keyword_init: true) do
        # @return [String] one line for logs
        def to_s
          return "malloc's free chunks left alone: #{skipped}" if skipped

          format("%d malloc free chunks sealed (%.1f MiB, %.1f MiB released)%s", chunks, bytes / 1048576.0,
            released / 1048576.0, unsealed? ? ", since unsealed" : "")
        end

        # @api private
        def hold(addresses)
          @addresses = addresses
          @owner = Process.pid
          self
        end

        # Gives the sealed chunks back to malloc, for this process to reuse.
        # Call it once the children forked after the seal are gone (or no
        # longer matter): a child's pages are its own by then, and freeing
        # while they share them would copy, in this process, the pages the
        # chunk headers lie in. Does nothing in a child (the chunks are the
        # parent's to give back) or a second time.
        # @return [Integer] chunks freed
        def unseal
          addresses = @addresses
          return 0 unless addresses && @owner == Process.pid

          @addresses = nil
          Malloc.free_all(addresses)
        end

        # @return [Boolean] whether {#unseal} gave the chunks back
        def unsealed?
          @addresses.nil? && !@owner.nil?
        end
      end

      NOTHING = Sealed.new(chunks: 0, bytes: 0, released: 0).freeze

      # Request sizes for the first pass, largest first: below the smallest
      # mmap threshold (128 KiB), so every request is served from the heap.
      # A large free chunk is split into pieces this size; what is left is
      # taken by the smaller ones.
      SPLIT_SIZES = [65536, 32768, 16384, 8192, 4096, 2048, 1024, 512, 256, 128, 64, 32, 16].freeze
      # The per-thread cache keeps up to 7 chunks of each size up to 1,032
      # bytes, reachable only by a request of exactly that size: the second
      # pass asks for each (chunk size - 8, from 1,040 down to 32).
      CACHED_SIZES = 1040.step(32, -16).map { |chunk| chunk - 8 }.freeze
      # A malloc served from above this distance below the program break may
      # come from the top chunk (fresh memory): glibc keeps 128 KiB of it
      # after a trim. Free chunks up there, if any, are left alone.
      TOP_SLACK = 128 * 1024 + 4096
      # Never take more than this many chunks, whatever happens.
      MAX_CHUNKS = 4_000_000
      PAGE = 4096
      MADV_DONTNEED = 4

      class << self
        # @return [Boolean] whether this process allocates with glibc's malloc
        def available?
          !functions.nil?
        end

        # @return [String, nil] why sealing and trimming cannot run here, nil if they can
        def unsupported
          return nil if available?

          @unsupported || "malloc is not glibc's"
        end

        # Takes every free chunk of the main arena, until {Sealed#unseal}, and
        # releases the whole pages inside the large ones. Call it in a process
        # that is about to fork, after its last GC (which frees more chunks).
        # Later frees make new free chunks: seal again before the next fork,
        # and unseal the previous seal once its children are gone.
        #
        # @return [Sealed] `skipped` says why when malloc is not glibc's
        def seal_free_chunks
          return skipped(unsupported) unless available?

          chunks = bytes = released = 0
          addresses = []
          take_free_chunks do |address, size|
            chunks += 1
            bytes += size
            released += release_inside(address, size)
            addresses << address
          end
          trim
          Sealed.new(chunks: chunks, bytes: bytes, released: released).hold(addresses)
        end

        # @return [Sealed] a seal that did not happen, and why
        def skipped(reason)
          Sealed.new(chunks: 0, bytes: 0, released: 0, skipped: reason)
        end

        # Frees every address (what {Sealed#unseal} holds).
        # @api private
        # @return [Integer] how many
        def free_all(addresses)
          return 0 unless available?

          free = functions[:free]
          addresses.each { |address| free.call(address) }
          addresses.size
        end

        # Runs the block while every free chunk of the main arena is taken, so
        # that what the block mallocs comes from fresh memory, in address
        # order, next to each other; then gives the chunks back. For
        # allocations that are written together later and should share as
        # few pages as possible ({PageDescriptors.pack}).
        # @yield with nothing taken where malloc is not glibc's
        # @return the block's value
        def from_fresh_memory
          return yield unless available?

          taken = []
          take_free_chunks { |address, _size| taken << address }
          begin
            yield
          ensure
            taken.each { |address| functions[:free].call(address) }
          end
        end

        # @return [Integer, nil] malloc'd address of `size` bytes (the process's
        #   own malloc, as Ruby's), nil if unavailable or out of memory
        def allocate(size)
          return nil unless available?

          address = functions[:malloc].call(size)
          address.zero? ? nil : address
        end

        # Frees what {.allocate} returned (or anything malloc'd).
        def release(address)
          functions[:free].call(address) if available?
        end

        # Gives the free pages of malloc's heap back to the kernel
        # (`malloc_trim(0)`): for a long-lived process done booting.
        # @return [Boolean] whether any memory was released
        def trim
          available? && functions[:malloc_trim].call(0) == 1
        end

        private

        # Yields (address, size) for every free chunk taken below the top, largest requests first.
        def take_free_chunks
          limit = functions[:sbrk].call(0) - TOP_SLACK
          chunks = 0
          [SPLIT_SIZES, CACHED_SIZES].each do |sizes|
            sizes.each do |size|
              while chunks < MAX_CHUNKS && (address = take(size, limit))
                chunks += 1
                yield address, size
              end
            end
          end
        end

        # @return [Integer, nil] the address of a free chunk for `size` bytes,
        #   nil when malloc had none left below the top
        def take(size, limit)
          address = functions[:malloc].call(size)
          return address if address.positive? && address < limit

          functions[:free].call(address) if address.positive?
          nil
        end

        # Gives the whole pages inside a sealed chunk back to the kernel: the
        # chunk is never read, and its header lies in the page before.
        def release_inside(address, size)
          first = (address + PAGE - 1) & -PAGE
          last = (address + size) & -PAGE
          return 0 if last - first < PAGE

          functions[:madvise].call(first, last - first, MADV_DONTNEED).zero? ? last - first : 0
        end

        def functions
          return @functions if defined?(@functions)

          @functions = glibc_functions
        end

        def glibc_functions
          return unsupported!("not Linux (#{RUBY_PLATFORM})") unless RUBY_PLATFORM.include?("linux")

          libc = Fiddle::Handle.new("libc.so.6")
          # Another allocator (LD_PRELOAD, or Ruby built with jemalloc) wins
          # the lookup of "malloc": its heap is not glibc's.
          unless libc["malloc"] == Fiddle::Handle::DEFAULT["malloc"]
            return unsupported!("malloc is not glibc's (jemalloc, tcmalloc or another allocator is loaded)")
          end

          address = Fiddle::TYPE_UINTPTR_T
          {
            # With the GVL held: a malloc that lets other threads run might
            # let them allocate objects in the middle of PageDescriptors.pack.
            malloc: Fiddle::Function.new(libc["malloc"], [Fiddle::TYPE_SIZE_T], address, need_gvl: true),
            free: Fiddle::Function.new(libc["free"], [address], Fiddle::TYPE_VOID, need_gvl: true),
            malloc_trim: Fiddle::Function.new(libc["malloc_trim"], [Fiddle::TYPE_SIZE_T], Fiddle::TYPE_INT),
            sbrk: Fiddle::Function.new(libc["sbrk"], [Fiddle::TYPE_INTPTR_T], address),
            madvise: Fiddle::Function.new(libc["madvise"], [address, Fiddle::TYPE_SIZE_T, Fiddle::TYPE_INT],
              Fiddle::TYPE_INT)
          }
        rescue Fiddle::DLError => e
          unsupported!("no glibc (#{e.message})")
        end

        def unsupported!(reason)
          @unsupported = reason
          nil
        end
      end
    end
  end
end
