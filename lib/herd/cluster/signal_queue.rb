# frozen_string_literal: true

module Herd
  module Cluster
    # Signals become entries in a queue and a byte in a pipe, so the
    # monitor's one IO.select wakes up for them and handles them in its own
    # loop, never inside a trap handler.
    # @api private
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

      # @return [Array<String>] the signals handled since the last call, in the order their
      #   handlers ran (signals pending together run lowest number first)
      def drain
        @reader.read_nonblock(1024, exception: false)
        names = []
        names << @queue.pop until @queue.empty?
        names
      end

      # In a process forked by the monitor, before it sets its own handlers:
      # a signal in between is ignored rather than written into a pipe this
      # process is about to close (or taking its default action: USR1 and
      # HUP terminate, TTIN stops).
      def reset_in_child
        @previous.each_key { |name| trap(name, (name == "CHLD") ? "DEFAULT" : "IGNORE") }
        close
      end

      # Closes the pipe (in a child that set handlers of its own).
      def close
        @reader.close unless @reader.closed?
        @writer.close unless @writer.closed?
      end
    end
  end
end
