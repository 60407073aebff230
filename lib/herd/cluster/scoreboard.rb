# frozen_string_literal: true

require_relative "../shared_memory"

module Herd
  module Cluster
    # What each worker is doing, in memory shared by the monitor and every
    # process forked after it: when the current request started, how many
    # requests the worker served, and the request line. Workers write it with
    # plain memory writes; the monitor reads it every tick for timeouts. No
    # message, no wake-up of the monitor per request.
    #
    # It has a fixed number of slots (allocated before the first fork); a
    # worker numbered beyond them reports over its link instead, so TTIN has
    # no upper bound.
    # @api private
    class Scoreboard
      # Per slot: started (µs, 0 when idle), requests, 8 bytes unused, then
      # the label, ended by a NUL unless it fills its room.
      SLOT_BYTES = 256
      REQUESTS_OFFSET = 8
      LABEL_OFFSET = 24
      LABEL_MAX = SLOT_BYTES - LABEL_OFFSET
      LABEL_END = "\0"

      # @param slots [Integer]
      # @param native [Boolean] see {SharedMemory.allocate_slots}
      # @return [Scoreboard, nil] nil where shared memory is not available
      def self.allocate(slots, native: Extension.unused_reason.nil?)
        memory = SharedMemory.allocate_slots(slots * SLOT_BYTES / SharedMemory::SLOT, native: native)
        memory && new(memory, slots)
      end

      attr_reader :slots

      def initialize(memory, slots)
        @memory = memory
        @slots = slots
      end

      # @return [Boolean] whether worker `number` has a slot
      def covers?(number)
        number < @slots
      end

      # Worker side, before its first request: the two writes per request
      # through herd's C extension ({ScoreboardSlots}: plain stores instead
      # of some 25 method calls), when it is built, not switched off, and
      # writes this very layout to this scoreboard's memory: a
      # {SharedMemory::Native} mapping, which it checks each slot against.
      # @param c_slots [#busy, #idle, #layout, nil] nil: the writes in Ruby
      # @return [void]
      def write_with(c_slots)
        return unless c_slots && @memory.native? &&
          c_slots.layout == [SLOT_BYTES, REQUESTS_OFFSET, LABEL_OFFSET, LABEL_MAX]

        @c_slots = c_slots
      end

      # Monitor side, before spawning the worker that will own the slot.
      # @param number [Integer] the worker's slot
      # @raise [SharedMemory::OutOfBounds] when the slot is not on the scoreboard
      def reset(number)
        @memory.write(number * SLOT_BYTES, "\0" * LABEL_OFFSET)
      end

      # Worker side: a request started. The label is "METHOD target", put
      # together in a reused buffer (no String per request) and written
      # first, with its NUL; then the start time: the monitor reads a label
      # only once the start time is set. Two writes per request, one when
      # it ends: the fewer calls, the less a request costs.
      # @param number [Integer] the worker's slot
      # @param method [String]
      # @param target [String]
      # @raise [SharedMemory::OutOfBounds] when the slot is not on the scoreboard
      def busy(number, method, target)
        return @c_slots.busy(@memory, number, method, target) if @c_slots

        base = number * SLOT_BYTES
        label = (@label ||= String.new(capacity: LABEL_MAX + 16, encoding: Encoding::BINARY))
        label.clear.force_encoding(Encoding::BINARY) << method << " " << target << LABEL_END
        label = label.byteslice(0, LABEL_MAX) if label.bytesize > LABEL_MAX
        @memory.write(base + LABEL_OFFSET, label)
        started = (@started_values ||= [0])
        started[0] = now_us
        @memory.write_ints(base, started)
      end

      # Worker side: the request is done (start time 0 and the count, in one write).
      # @param number [Integer] the worker's slot
      # @param requests [Integer] served so far
      # @raise [SharedMemory::OutOfBounds] when the slot is not on the scoreboard
      def idle(number, requests)
        return @c_slots.idle(@memory, number, requests) if @c_slots

        values = (@idle_values ||= [0, 0])
        values[1] = requests
        @memory.write_ints(number * SLOT_BYTES, values)
      end

      # Worker side: the count alone, while the worker stays busy (a job
      # worker finishes jobs while others run).
      # @param number [Integer] the worker's slot
      # @param requests [Integer] done so far
      def count(number, requests)
        values = (@count_values ||= [0])
        values[0] = requests
        @memory.write_ints(number * SLOT_BYTES + REQUESTS_OFFSET, values)
      end

      # Monitor side.
      # @return [Array(Float, String), nil] seconds since the request started and
      #   its request line, or nil when idle
      def current(number)
        base = number * SLOT_BYTES
        started = @memory.read_int(base)
        return nil if started.zero?

        label = @memory.read(base + LABEL_OFFSET, LABEL_MAX)
        label = label.byteslice(0, label.index(LABEL_END) || LABEL_MAX)
        [(now_us - started) / 1_000_000.0, label.force_encoding(Encoding::UTF_8).scrub]
      end

      # @return [Integer] requests served by the slot's worker
      def requests(number)
        @memory.read_int(number * SLOT_BYTES + REQUESTS_OFFSET)
      end

      private

      def now_us
        Process.clock_gettime(Process::CLOCK_MONOTONIC, :microsecond)
      end
    end
  end
end
