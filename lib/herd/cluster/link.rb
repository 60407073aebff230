# frozen_string_literal: true

require "socket"
require_relative "protocol"

module Herd
  module Cluster
    # One end of the socketpair between the monitor and one child (a mold or
    # a worker): small Marshal'd messages (Protocol), one per SOCK_SEQPACKET packet, so
    # no framing and no partial reads; an IO can ride along with a message
    # (SCM_RIGHTS), which is how a worker's end reaches the mold that forks it.
    # @api private
    class Link
      MAX_PACKET = 64 * 1024

      # @return [Array(Link, Link)]
      def self.pair
        Socket.pair(:UNIX, :SEQPACKET).map { |socket| new(socket) }
      end

      attr_reader :io

      def initialize(io)
        @io = io
        @ios = []
        @peek = String.new(capacity: 1, encoding: Encoding::BINARY)
      end

      # @param io [IO, nil] sent along (the receiver gets its own descriptor)
      # @return [Boolean] false when the peer is gone
      def send_message(message, io: nil)
        payload = Marshal.dump(message)
        if io
          @io.sendmsg(payload, 0, nil, Socket::AncillaryData.unix_rights(io))
        else
          @io.sendmsg(payload)
        end
        true
      rescue Errno::EPIPE, Errno::ECONNRESET, Errno::ENOTCONN, IOError
        false
      end

      # @return [Array(Array, Boolean)] messages available now, and whether the peer closed
      def read_ready
        messages = []
        reset = false
        loop do
          begin
            return [messages, reset] unless pending?

            data, _, _, *controls = @io.recvmsg_nonblock(MAX_PACKET, 0, nil, scm_rights: true, exception: false)
          rescue Errno::ECONNRESET
            # The peer closed with messages of ours unread (a refusal of
            # promotion while the monitor was stopping it). Linux reports
            # that once, then still delivers what the peer sent first.
            return [messages, true] if reset

            reset = true
            next
          end
          return [messages, reset] if data == :wait_readable
          return [messages, true] if data.nil? || data.empty?

          controls.each { |control| @ios.concat(control.unix_rights) if control.cmsg_is?(:SOCKET, :RIGHTS) }
          # Our own processes, over a private socketpair.
          messages << Marshal.load(data) # standard:disable Security/MarshalLoad
        end
      rescue IOError
        [messages, true]
      end

      # Blocks until a message arrives.
      # @return [Array, nil] the message, nil when the peer closed
      def receive(timeout: nil)
        loop do
          messages, closed = read_ready
          @pending = (@pending || []).concat(messages)
          return @pending.shift unless @pending.empty?
          return nil if closed
          return nil unless @io.wait_readable(timeout)
        end
      end

      # @return [IO, nil] the next IO received along with a message
      def take_io
        @ios.shift
      end

      def close
        @ios.each(&:close)
        @io.close unless @io.closed?
      end

      def closed?
        @io.closed?
      end

      private

      # recvmsg allocates its buffers (MAX_PACKET, and 4 KiB for descriptors)
      # before it knows whether anything came: garbage per look at an empty
      # link, which a worker under load takes ten times a second and keeps
      # until its next GC, and which becomes holes in the mold promoted from
      # it (docs/COPY_ON_WRITE.md, "Where the holes fall"). A peek into a
      # reused byte costs the same syscall and nothing. (Not
      # IO#wait_readable(0): Ruby skips its poll when an interrupt is
      # pending and answers "not readable".)
      def pending?
        @io.recv_nonblock(1, Socket::MSG_PEEK, @peek, exception: false) != :wait_readable
      end
    end
  end
end
