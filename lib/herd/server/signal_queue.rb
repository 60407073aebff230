# frozen_string_literal: true

module Herd
  module Server
    # Signals become entries in a queue and a byte in a pipe, so the
    # monitor's one IO.select wakes up for them and handles them in its own
    # loop, never inside a trap handler.
    class SignalQueue
      def initialize(signals)
        @reader, @writer = IO.pipe
        @queue = Queue.new
        @previous = signals.to_h do |name|
          [name, trap(name) do
            @queue << name
            @writer.write_nonblock(".", exception: false)
          end]
        end
      end

      # @return [IO] readable when a signal arrived
      def io
        @reader
      end

      # @return [Array<IO>] both ends of the pipe (a child closes them)
      def ios
        [@reader, @writer]
      end

      # @return [Array<String>] the signals received since the last call, in order
      def drain
        @reader.read_nonblock(1024, exception: false)
        names = []
        names << @queue.pop until @queue.empty?
        names
      end

      # In a forked child: default handlers back (the child sets its own) and
      # the pipe closed, so a signal to the child never writes into it.
      def reset_in_child
        @previous.each_key { |name| trap(name, "DEFAULT") }
        @reader.close
        @writer.close
      end
    end
  end
end
