# frozen_string_literal: true

require "timeout"
require_relative "errors"
require_relative "error_payload"
require_relative "../clock"

module Herd
  class Pool
    # What a worker does, whatever it is (process, thread or the caller
    # itself): take a batch, run the job on each item, send the results back.
    #
    # Messages in: `[:batch, run_id, with_index, flush_each, indices, items, last]`
    # (indices alone when the worker can read the items from its own copy of
    # the source; `last` when the worker is to exit after this batch) and
    # `[:stop]`. Out: `[:results, run_id, entries, done, busy]`, an entry
    # being `[index, status, value]` with status :ok, :error, :break or
    # :unserializable, and `busy` the seconds the batch took here (with
    # `done` only).
    # @api private
    class WorkerLoop
      TIMEOUT_MESSAGE = "herd item timeout"
      # @param job [#call] the pool's job, called with (item) or (item, index)
      # @param transport [#receive, #deliver]
      # @param item_board [ItemBoard]
      # @param slot [Integer] this worker's place on the item_board
      # @param resolver [#call, nil] index -> item, when items travel as indices
      # @param item_timeout [Numeric, nil] enforce timeouts here (inline runs only)
      def initialize(job:, transport:, item_board:, slot:, resolver: nil, item_timeout: nil)
        @job = job
        @transport = transport
        @item_board = item_board
        @slot = slot
        @resolver = resolver
        @item_timeout = item_timeout
      end

      # Serves batches until told to stop, a batch says it is the last, or
      # the parent goes away.
      # @param first [Array, nil] a batch message already in memory (a worker
      #   forked with its first batch), run before anything is read
      def run(first = nil)
        message = first || @transport.receive
        while message
          break if message.first == :stop

          run_batch(*message[1, 5])
          break if message[6]

          message = @transport.receive
        end
      end

      # @api private
      def run_batch(run_id, with_index, flush_each, indices, items)
        started = Clock.now
        items ||= indices.map { |index| @resolver.call(index) }
        entries = []
        indices.each_with_index do |index, position|
          break if @item_board.cancelled?(@slot)

          @item_board.start_item(@slot, index)
          entry = run_item(items[position], index, with_index)
          entries << entry
          break unless entry[1] == :ok

          if flush_each
            @transport.deliver([:results, run_id, entries, false])
            entries = []
          end
        end
      ensure
        @item_board.idle(@slot)
        @transport.deliver([:results, run_id, entries, true, Clock.now - started]) if entries
      end

      private

      # `break` (or `return`, or a throw) in the job leaves it without an
      # exception, towards a frame of the caller's: in a forked worker that
      # frame lies beyond the fork, where Ruby reports an "unexpected break"
      # and the worker dies. Caught here, it stops the call as
      # `raise Herd::Break` does; its value is lost on the way (Ruby hands
      # it to no ensure clause), so it returns nil.
      def run_item(item, index, with_index)
        left = true
        entry = call_job_safely(item, index, with_index)
        left = false
        entry
      rescue Exception # rubocop:disable Lint/RescueException -- only to note that the job ended by raising
        left = false
        raise
      ensure
        # Thread#kill unwinds without an exception as well, and must go on. A
        # return here is what ends a break's unwinding.
        return [index, :break, nil] if left && Thread.current.status != "aborting" # rubocop:disable Lint/EnsureReturn
      end

      def call_job_safely(item, index, with_index)
        [index, :ok, call_job(item, index, with_index)]
      rescue Break => e
        [index, :break, e.value]
      rescue LocalJumpError => e
        # A thread worker's `break` arrives as this, value and all.
        raise unless e.reason == :break

        [index, :break, e.exit_value]
      rescue ::Timeout::Error => e
        raise unless @item_timeout && e.message == TIMEOUT_MESSAGE

        [index, :timeout, nil]
      rescue SystemExit, SignalException
        raise
      rescue Exception => e # rubocop:disable Lint/RescueException -- any failure of the job belongs to the caller
        [index, :error, e]
      end

      def call_job(item, index, with_index)
        args = with_index ? [item, index] : [item]
        return @job.call(*args) unless @item_timeout

        ::Timeout.timeout(@item_timeout, ::Timeout::Error, TIMEOUT_MESSAGE) { @job.call(*args) }
      end
    end
  end
end
