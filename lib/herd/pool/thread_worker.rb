# frozen_string_literal: true

require_relative "worker_loop"

module Herd
  class Pool
    # A worker thread with the interface of {ProcessWorker}: batches go in
    # through a queue, results come out through another, and a pipe wakes the
    # parent's IO.select so threads and processes share one event loop.
    # @api private
    class ThreadWorker
      # The in-thread side of the queues.
      class Transport
        def initialize(inbox, outbox, doorbell)
          @inbox = inbox
          @outbox = outbox
          @doorbell = doorbell
        end

        def receive
          @inbox.pop
        end

        def deliver(message)
          @outbox << message
          ring
        end

        def ring
          @doorbell.write_nonblock("!", exception: false)
        rescue IOError
          nil
        end
      end

      attr_reader :number

      def initialize(number, setup)
        @number = number
        @setup = setup
      end

      def pid
        nil
      end

      # Only process workers of a one-call pool exit on their own.
      def retiring?
        false
      end

      def start(_siblings = nil)
        @inbox = Queue.new
        @outbox = Queue.new
        @io, doorbell = IO.pipe
        transport = Transport.new(@inbox, @outbox, doorbell)
        # A new thread inherits its creator's interrupt mask, and the pool
        # creates workers with interrupts deferred: this one must stay
        # killable (timeouts, #terminate).
        @thread = Thread.new { Thread.handle_interrupt(Object => :immediate) { serve(transport, doorbell) } }
        @thread.report_on_exception = false
        self
      end

      attr_reader :io

      def send_batch(message)
        return false unless @thread.alive?

        @inbox << message
        true
      end

      def read_ready
        return [[], true] if @io.closed?

        @io.read_nonblock(4096, exception: false)
        messages = []
        messages << @outbox.pop until @outbox.empty?
        [messages, !@thread.alive? && @outbox.empty?]
      end

      def stop
        @inbox.close
      end

      # @return [IO, nil] readable when the thread may have ended (it closes
      #   the doorbell as it ends), nil once that was seen
      def exit_io
        return nil if @exit_seen || @io.nil? || @io.closed?

        @io
      end

      def exit_io_ready
        loop do
          chunk = @io.read_nonblock(4096, exception: false)
          break if chunk == :wait_readable
          break @exit_seen = true if chunk.nil?
        end
      rescue IOError
        @exit_seen = true
      end

      def signal(_name)
        kill
      end

      def kill
        @thread&.kill
      end

      def reap(wait: true)
        return :thread unless @thread
        return nil unless wait || !@thread.alive?

        @thread.join
        @io.close unless @io.closed?
        :thread
      end

      def to_s
        "thread worker #{@number}"
      end

      def describe_exit(_status)
        "thread ended (killed, or the job called Thread.exit)"
      end

      private

      def serve(transport, doorbell)
        Thread.current[:herd_worker_number] = @number
        WorkerLoop.new(job: @setup.job, transport: transport, item_board: @setup.item_board,
          slot: @number, resolver: @setup.resolver).run
      ensure
        transport.ring
        doorbell.close
      end
    end
  end
end
