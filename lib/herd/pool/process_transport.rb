# frozen_string_literal: true

require_relative "error_payload"
require_relative "../process_exit"

module Herd
  class Pool
    # The worker process's end of its channel: results go out marshalled, with
    # exceptions as {ErrorPayload}s and unmarshallable results replaced by a
    # note, so one bad value costs its item, never the worker.
    # @api private
    class ProcessTransport
      def initialize(channel)
        @channel = channel
      end

      def receive
        @channel.receive
      end

      def deliver(message)
        kind, run_id, entries, done, busy = message
        entries = entries.map { |entry| (entry[1] == :error) ? [entry[0], :error, ErrorPayload.dump(entry[2])] : entry }
        payload = dump([kind, run_id, entries, done, busy]) ||
          Marshal.dump([kind, run_id, entries.map { |entry| dumpable(entry) }, done, busy])
        @channel.write_frame(payload)
      rescue Errno::EPIPE, Errno::ECONNRESET, IOError
        # The parent is gone: nobody is left to work for.
        ProcessExit.now(1)
      end

      private

      def dump(message)
        Marshal.dump(message)
      rescue TypeError, ArgumentError, NoMethodError
        nil
      end

      def dumpable(entry)
        index, status, value = entry
        return entry unless status == :ok || status == :break

        Marshal.dump(value)
        entry
      rescue TypeError, ArgumentError, NoMethodError => e
        [index, :unserializable, "#{value.class}: #{e.message}"]
      end
    end
  end
end
