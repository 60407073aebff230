# frozen_string_literal: true

require_relative "../clock"

module Herd
  module Server
    # The connections a worker accepted whose request head is still
    # arriving. The worker watches them with its listeners and hands one to
    # the application only once its head is complete (or can be refused), so
    # a client sending a byte per second holds a descriptor, never the
    # worker (slowloris). At most `limit` of them: one more makes room by
    # taking out the oldest, whose head is then answered with 408.
    #
    # Connections kept open after a response (the `keep_alive` option) are
    # held here too, until their next request's head is complete or their
    # idle time is over. Kept in the order they were held; deadlines differ
    # (a new connection's is read_timeout from its accept, a kept one's
    # keep_alive from its last response, then read_timeout from its first
    # byte), so expiry looks at each.
    class PendingConnections
      # One held connection: what serving it needs later.
      Pending = Struct.new(:client, :remote, :listener, :reader)

      # @return [Integer]
      attr_reader :limit

      # @param limit [Integer] connections held at most (max_pending_heads)
      def initialize(limit)
        @limit = limit
        @by_client = {}
        @clients = nil
      end

      # @return [Boolean]
      def empty?
        @by_client.empty?
      end

      # @return [Integer]
      def size
        @by_client.size
      end

      # @param client [IO]
      # @return [Pending, nil]
      def [](client)
        @by_client[client]
      end

      # @return [Array<IO>] the client sockets, for IO.select (the same Array until the set changes)
      def clients
        @clients ||= @by_client.keys
      end

      # Holds a connection.
      # @param pending [Pending]
      # @return [Pending, nil] the oldest, taken out to make room: the caller answers it
      def hold(pending)
        evicted = take(@by_client.first[1]) if @by_client.size >= @limit
        @by_client[pending.client] = pending
        @clients = nil
        evicted
      end

      # @param pending [Pending]
      # @return [Pending]
      def take(pending)
        @by_client.delete(pending.client)
        @clients = nil
        pending
      end

      # @param max [Numeric] seconds
      # @return [Numeric] how long to wait for IO before the oldest head's deadline, at most `max`
      def wait_at_most(max)
        return max if @by_client.empty?

        next_deadline = @by_client.each_value.min_by { |pending| pending.reader.head_deadline }.reader.head_deadline
        (next_deadline - Clock.now).clamp(0, max)
      end

      # @return [Array<Pending>] those whose head deadline has passed, taken out
      def take_expired
        now = Clock.now
        expired = @by_client.each_value.select { |pending| pending.reader.head_deadline <= now }
        expired.each { |pending| take(pending) }
      end

      # Closes the kept connections that have not begun their next request
      # (the worker stops: they would only wait for it). One whose request
      # is waiting unread stays, to be served: closing a socket with unread
      # input resets it, and the request would be lost. A client that sends
      # its request just as the connection closes sees it close, as after
      # any server's keep-alive timeout, and sends it again on a new one.
      def close_idle
        @by_client.each_value
          .select { |pending| pending.reader.idle? && !pending.client.wait_readable(0) }
          .each do |pending|
            take(pending)
            pending.client.close
          rescue IOError, SystemCallError
            nil
          end
      end

      # Gives every held head at most `seconds` more (the worker is
      # stopping). Accept order stays deadline order.
      # @param seconds [Numeric]
      # @param reason [String] for the 408's log line
      def hurry(seconds, reason)
        at = Clock.now + seconds
        @by_client.each_value { |pending| pending.reader.expire_head!(reason, at: at) }
      end

      # Closes every held connection (the worker stops, or this is a fork
      # that must not keep them open: the client would never see the close).
      def close_all
        @by_client.each_key do |client|
          client.close
        rescue IOError, SystemCallError
          nil
        end
        @by_client.clear
        @clients = nil
      end
    end
  end
end
