# frozen_string_literal: true

require_relative "../shared_memory"

module Herd
  class Pool
    # What each worker is doing right now, written by the worker and read by the
    # parent without a message: the item it is on, how many items it has
    # started, and a cancel flag the parent raises to stop a batch early.
    #
    # For process workers it lives in shared memory, so the parent still knows
    # which item a worker was on after the worker died. Threads (and systems
    # without mmap) use an ordinary array: same interface.
    # @api private
    class ItemBoard
      FIELDS = 3 # current item index (-1: idle), items started, cancel flag
      IDLE = -1

      # @param slots [Integer] one per worker
      # @param shared [Boolean] whether forked children must see it
      def initialize(slots, shared:)
        @memory = SharedMemory.allocate_slots(slots * FIELDS) if shared
        @memory ||= Array.new(slots * FIELDS, 0)
        slots.times { |slot| idle(slot) }
      end

      # Worker side: about to run item `index`.
      def start_item(slot, index)
        @memory[slot * FIELDS] = index
        @memory[slot * FIELDS + 1] += 1
      end

      # Worker side: between batches.
      def idle(slot)
        @memory[slot * FIELDS] = IDLE
      end

      # @return [Integer, nil] the item the worker is on, nil when idle
      def current_item(slot)
        index = @memory[slot * FIELDS]
        (index == IDLE) ? nil : index
      end

      # @return [Integer] items started so far; a change means progress
      def started(slot)
        @memory[slot * FIELDS + 1]
      end

      # Parent side: ask the worker to drop the rest of its batch.
      def cancel(slot, value = true)
        @memory[slot * FIELDS + 2] = value ? 1 : 0
      end

      def cancelled?(slot)
        @memory[slot * FIELDS + 2] == 1
      end

      def free
        @memory.free if @memory.respond_to?(:free)
      end
    end
  end
end
