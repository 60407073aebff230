# frozen_string_literal: true

require "fiddle"

module Herd
  module Heap
    module PageDescriptors
      # Reads and copies words of this process's memory without allocating
      # Ruby objects: {PageDescriptors.pack} must not make Ruby take a new
      # object page while it rewrites the list of pages. Use it with the GC
      # disabled only (its buffer is a String that must not move).
      class RawMemory
        SIGSET_BYTES = 128
        SIG_BLOCK = 0
        SIG_SETMASK = 2
        MEMORY_PAGE = 4096

        def initialize
          libc = Fiddle::Handle::DEFAULT
          pointer = Fiddle::TYPE_UINTPTR_T
          # With the GVL held: nothing else may run Ruby code meanwhile.
          @memcpy = Fiddle::Function.new(libc["memcpy"], [pointer, pointer, Fiddle::TYPE_SIZE_T], pointer,
            need_gvl: true)
          @sigmask = Fiddle::Function.new(libc["pthread_sigmask"], [Fiddle::TYPE_INT, pointer, pointer],
            Fiddle::TYPE_INT, need_gvl: true)
          @word = ("\0" * Layout::WORD).b
          @word_address = Fiddle::Pointer[@word].to_i
          @all_signals = Fiddle::Pointer.malloc(SIGSET_BYTES, Fiddle::RUBY_FREE)
          @all_signals[0, SIGSET_BYTES] = "\xFF".b * SIGSET_BYTES
          @saved_signals = Fiddle::Pointer.malloc(SIGSET_BYTES, Fiddle::RUBY_FREE)
          @mincore = Fiddle::Function.new(libc["mincore"], [pointer, Fiddle::TYPE_SIZE_T, pointer], Fiddle::TYPE_INT,
            need_gvl: true)
          @residency = Fiddle::Pointer.malloc(1, Fiddle::RUBY_FREE)
        end

        # @return [Integer] the word at `address`
        def word(address)
          @memcpy.call(@word_address, address, Layout::WORD)
          @word.unpack1("J")
        end

        # @return [Integer, nil] the word at `address`, nil where nothing is mapped
        def word_if_mapped(address)
          word(address) if readable?(address)
        end

        # Whether memory is mapped at `address` (mincore fails where it is
        # not), asked of the kernel at the time: the heap may have grown
        # since any list of mappings was read.
        def readable?(address)
          page = address & -MEMORY_PAGE
          return false if page.zero? || address + Layout::WORD > page + MEMORY_PAGE

          @mincore.call(page, MEMORY_PAGE, @residency.to_i).zero?
        end

        def copy(to, from, bytes)
          @memcpy.call(to, from, bytes)
        end

        # Runs the block with every signal blocked: no signal handler (and
        # no Ruby trap) runs in the middle of it.
        def without_signals
          @sigmask.call(SIG_BLOCK, @all_signals.to_i, @saved_signals.to_i)
          yield
        ensure
          @sigmask.call(SIG_SETMASK, @saved_signals.to_i, 0)
        end
      end
    end
  end
end
