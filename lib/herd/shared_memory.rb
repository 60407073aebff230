# frozen_string_literal: true

require "fiddle"

module Herd
  # An anonymous shared mapping (mmap MAP_SHARED|MAP_ANONYMOUS through
  # Fiddle): memory that a parent and the children it forks afterwards all see,
  # so a child can publish a number with a plain memory write — no syscall,
  # no message — and the parent can read it even after the child died.
  # @api private
  class SharedMemory
    PROT_READ_WRITE = 0x1 | 0x2
    MAP_SHARED_ANONYMOUS = 0x01 | (RUBY_PLATFORM.include?("darwin") ? 0x1000 : 0x20)
    SLOT = 8

    class << self
      # @return [SharedMemory, nil] nil where mmap cannot be reached
      def allocate_slots(count)
        return nil unless mmap

        bytes = [count * SLOT, 1].max
        address = mmap.call(nil, bytes, PROT_READ_WRITE, MAP_SHARED_ANONYMOUS, -1, 0)
        return nil if address.to_i == -1 || address.null?

        new(address, bytes)
      end

      private

      def mmap
        return @mmap if defined?(@mmap)

        handle = Fiddle::Handle::DEFAULT
        @munmap = Fiddle::Function.new(handle["munmap"], [Fiddle::TYPE_VOIDP, Fiddle::TYPE_SIZE_T], Fiddle::TYPE_INT)
        @mmap = Fiddle::Function.new(handle["mmap"],
          [Fiddle::TYPE_VOIDP, Fiddle::TYPE_SIZE_T, Fiddle::TYPE_INT, Fiddle::TYPE_INT, Fiddle::TYPE_INT, Fiddle::TYPE_LONG],
          Fiddle::TYPE_VOIDP)
      rescue Fiddle::DLError
        @mmap = nil
      end

      public

      # @api private
      attr_reader :munmap
    end

    def initialize(address, bytes)
      @address = address
      @bytes = bytes
    end

    # @return [Integer] the signed 64-bit number in slot `slot`
    def [](slot)
      @address[slot * SLOT, SLOT].unpack1("q")
    end

    def []=(slot, value)
      @address[slot * SLOT, SLOT] = [value].pack("q")
    end

    # Writes a signed 64-bit number at byte `offset`.
    # @param offset [Integer]
    # @param value [Integer]
    def write_int(offset, value)
      values = (@one_value ||= [0]) # reused: no Array per write
      values[0] = value
      write_ints(offset, values)
    end

    # Writes signed 64-bit numbers one after the other from byte `offset`,
    # in one copy, packed into a reused buffer (a server worker writes three
    # times per request). Not thread-safe: one buffer per mapping, for a
    # process's one writing thread.
    # @param offset [Integer]
    # @param values [Array<Integer>]
    def write_ints(offset, values)
      scratch = (@scratch ||= String.new(capacity: 8 * SLOT, encoding: Encoding::BINARY))
      values.pack("q*", buffer: scratch.clear)
      @address[offset, scratch.bytesize] = scratch
    end

    # @return [Integer] where the mapping starts, for C code that writes to
    #   it (Server::ScoreboardSlots); 0 once freed
    def address
      @address.to_i
    end

    # @return [String] `length` raw bytes at byte `offset`
    def read(offset, length)
      @address[offset, length]
    end

    # Writes raw bytes at byte `offset`.
    def write(offset, bytes)
      @address[offset, bytes.bytesize] = bytes
    end

    # Unmaps the memory (in this process only).
    def free
      return unless @address

      self.class.munmap.call(@address, @bytes)
      @address = nil
    end
  end
end
