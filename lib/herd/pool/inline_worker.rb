# frozen_string_literal: true

require_relative "worker_loop"

module Herd
  class Pool
    # `processes: 0`: the caller runs every batch itself, serially, through the
    # same worker loop and error handling — for tests and debuggers.
    # @api private
    class InlineWorker
      attr_reader :number
      # A worker in the caller's own thread cannot be killed from outside, so
      # an inline run enforces `timeout:` with Timeout.timeout around the job.
      attr_writer :item_timeout

      def initialize(number, setup)
        @number = number
        @setup = setup
        @item_timeout = nil
        @outbox = []
      end

      def pid
        nil
      end

      # Only process workers of a one-call pool exit on their own.
      def retiring?
        false
      end

      def start(_siblings = nil)
        self
      end

      # No descriptor: the event loop reads {#read_ready} without waiting.
      def io
        nil
      end

      def send_batch(message)
        previous = Thread.current[:herd_worker_number]
        Thread.current[:herd_worker_number] = @number
        WorkerLoop.new(job: @setup.job, transport: self, item_board: @setup.item_board, slot: @number,
          resolver: @setup.resolver, item_timeout: @item_timeout).run_batch(*message[1, 5])
        true
      ensure
        Thread.current[:herd_worker_number] = previous
      end

      # Transport side, called by the worker loop.
      def deliver(message)
        @outbox << message
      end

      def read_ready
        messages = @outbox
        @outbox = []
        [messages, false]
      end

      def stop
      end

      def exit_io
        nil
      end

      def exit_io_ready
      end

      def signal(_name)
      end

      def kill
      end

      def reap(wait: true)
        :inline
      end

      def to_s
        "inline worker"
      end

      def describe_exit(_status)
        "stopped"
      end
    end
  end
end
