# frozen_string_literal: true

require "fiddle"
require_relative "errors"
require_relative "extension"

module Herd
  # An anonymous shared mapping (mmap MAP_SHARED|MAP_ANONYMOUS): memory that
  # a parent and the children it forks afterwards all see, so a child can
  # publish a number with a plain memory write — no syscall, no message —
  # and the parent can read it even after the child died.
  #
  # Every access is checked against the mapping's size and raises
  # {OutOfBounds} before writing anything outside it. Two implementations
  # with the same methods: {Native} (herd's C extension,
  # ext/herd/native/shared_memory.c), an object that owns the mapping
  # and unmaps it when collected, which the C scoreboard writes
  # (Cluster::ScoreboardSlots) take instead of an address; and this class,
  # through Fiddle, where the extension is not built or HERD_C_EXTENSION=0.
  # @api private
  class SharedMemory
    # An access (offset and length) not wholly inside the mapping, or to a
    # freed one; nothing was read or written.
    class OutOfBounds < Error; end

    PROT_READ_WRITE = 0x1 | 0x2
    MAP_SHARED_ANONYMOUS = 0x01 | (RUBY_PLATFORM.include?("darwin") ? 0x1000 : 0x20)
    SLOT = 8

    class << self
      # @param count [Integer] 8-byte slots
      # @param native [Boolean] whether to map through the C extension
      #   ({Native}) when it is built; false maps through Fiddle
      # @return [SharedMemory, nil] nil where mmap cannot be reached
      def allocate_slots(count, native: Extension.unused_reason.nil?)
        bytes = [count * SLOT, 1].max
        return map_natively(bytes) if native && defined?(Native)
        return nil unless mmap

        address = mmap.call(nil, bytes, PROT_READ_WRITE, MAP_SHARED_ANONYMOUS, -1, 0)
        return nil if address.to_i == -1 || address.null?

        new(address, bytes)
      end

      private

      # A failed mmap answers nil, as through Fiddle.
      def map_natively(bytes)
        Native.new(bytes)
      rescue SystemCallError
        nil
      end

      def mmap
        return @mmap if defined?(@mmap)

        handle = Fiddle::Handle::DEFAULT
        @munmap = Fiddle::Function.new(handle["munmap"], [Fiddle::TYPE_VOIDP, Fiddle::TYPE_SIZE_T], Fiddle::TYPE_INT)
        @mmap = Fiddle::Function.new(handle["mmap"],
          [Fiddle::TYPE_VOIDP, Fiddle::TYPE_SIZE_T, Fiddle::TYPE_INT, Fiddle::TYPE_INT, Fiddle::TYPE_INT,
            Fiddle::TYPE_LONG],
          Fiddle::TYPE_VOIDP)
      rescue Fiddle::DLError
        @mmap = nil
      end

      public

      # @api private
      attr_reader :munmap
    end

    # @param address [Fiddle::Pointer] a mapping of `bytes` bytes, from {allocate_slots}
    # @param bytes [Integer]
    def initialize(address, bytes)
      @address = address
      @bytes = bytes
    end

    # @return [Boolean] whether this is a {Native} mapping, which the C
    #   extension's writers accept
    def native?
      false
    end

    # @return [Integer] the mapping's size in bytes, 0 once freed
    def size
      @address ? @bytes : 0
    end

    # @param slot [Integer] 8-byte slot number
    # @return [Integer] the signed 64-bit number in slot `slot`
    # @raise [OutOfBounds] when the slot is not inside the mapping
    def [](slot)
      read_int(slot * SLOT)
    end

    # @param slot [Integer] 8-byte slot number
    # @param value [Integer] a signed 64-bit number
    # @raise [OutOfBounds] when the slot is not inside the mapping
    def []=(slot, value)
      write_int(slot * SLOT, value)
    end

    # @param offset [Integer] byte offset
    # @return [Integer] the signed 64-bit number at byte `offset`
    # @raise [OutOfBounds] when its 8 bytes are not inside the mapping
    def read_int(offset)
      check(offset, SLOT)
      @address[offset, SLOT].unpack1("q")
    end

    # Writes a signed 64-bit number at byte `offset`.
    # @param offset [Integer]
    # @param value [Integer]
    # @raise [OutOfBounds] when its 8 bytes are not inside the mapping
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
    # @raise [OutOfBounds] when they do not all fit in the mapping (nothing is written)
    def write_ints(offset, values)
      scratch = (@scratch ||= String.new(capacity: 8 * SLOT, encoding: Encoding::BINARY))
      values.pack("q*", buffer: scratch.clear)
      check(offset, scratch.bytesize)
      @address[offset, scratch.bytesize] = scratch
    end

    # @param offset [Integer]
    # @param length [Integer]
    # @return [String] `length` raw bytes at byte `offset`
    # @raise [OutOfBounds] when they are not all inside the mapping
    def read(offset, length)
      check(offset, length)
      @address[offset, length]
    end

    # Writes raw bytes at byte `offset`.
    # @param offset [Integer]
    # @param bytes [String]
    # @raise [OutOfBounds] when they do not all fit in the mapping (nothing is written)
    def write(offset, bytes)
      check(offset, bytes.bytesize)
      @address[offset, bytes.bytesize] = bytes
    end

    # Unmaps the memory (in this process only); every access afterwards raises.
    # @return [nil]
    def free
      return unless @address

      self.class.munmap.call(@address, @bytes)
      @address = nil
    end

    private

    # Fiddle copies wherever it is told, so this is the check that keeps
    # every access inside the mapping.
    def check(offset, length)
      return if @address && offset >= 0 && length >= 0 && offset + length <= @bytes

      detail = @address ? "outside the mapping's #{@bytes} bytes" : "of a freed mapping"
      raise OutOfBounds, "shared memory: #{length} bytes at offset #{offset} #{detail}"
    end
  end
end
