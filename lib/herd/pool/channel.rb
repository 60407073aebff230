# frozen_string_literal: true

require "socket"
require_relative "../descriptor_close"

module Herd
  class Pool
    # Framed Marshal messages over one end of a UNIX stream socketpair.
    #
    # A frame is a 4-byte big-endian length and a Marshal payload, so messages of
    # any size cross and the reader never parses a partial object. Reading is
    # buffered and non-blocking ({#read_ready}), so one thread can serve many
    # channels with IO.select; {#receive} blocks for the simple side (a worker).
    # @api private
    class Channel
      HEADER = 4
      READ_SIZE = 1 << 16

      # The buffer reads land in before they are appended to a channel's own:
      # one per thread, reused. Without one, a socket's read_nonblock makes a
      # READ_SIZE string per call, even when nothing came, and keeps that
      # capacity after a short read. A pool sends results in batches, so that
      # is garbage per batch, not per result, but a leak-shaped cost all the
      # same (docs/POOL.md, "Cost per call").
      # @return [String]
      def self.scratch
        Thread.current[:herd_channel_scratch] ||= String.new(capacity: READ_SIZE, encoding: Encoding::BINARY)
      end

      # @return [Array(Channel, Channel)] two connected ends
      def self.pair
        UNIXSocket.pair(:STREAM).map { |socket| new(socket) }
      end

      # @return [UNIXSocket] for IO.select
      attr_reader :io

      def initialize(io)
        @io = io
        @buffer = +"".b
      end

      # Sends one message. Raises Errno::EPIPE / IOError when the peer is gone.
      def send_message(message)
        write_frame(Marshal.dump(message))
      end

      # Sends a payload already produced by Marshal.dump (lets a caller find out
      # first whether the message can be marshalled at all).
      def write_frame(payload)
        @io.write([payload.bytesize].pack("N"), payload)
      end

      # Blocks until a whole message arrives.
      # @return [Object, nil] the message, or nil when the peer closed
      def receive
        loop do
          message = next_message
          return message.first if message

          begin
            @buffer << @io.readpartial(READ_SIZE, Channel.scratch)
          rescue Errno::ECONNRESET, IOError # EOFError is an IOError
            return nil
          end
        end
      end

      # Reads what is available without blocking.
      # @return [Array(Array<Object>, Boolean)] whole messages, and whether the peer closed
      def read_ready
        eof = false
        loop do
          chunk = @io.read_nonblock(READ_SIZE, Channel.scratch, exception: false)
          break if chunk == :wait_readable

          if chunk.nil?
            eof = true
            break
          end
          @buffer << chunk
          break if chunk.bytesize < READ_SIZE
        end
        [drain, eof]
      rescue Errno::ECONNRESET, IOError
        [drain, true]
      end

      # Reads and drops whatever is available, for a parent that only waits
      # for the peer to end (results of a finished call matter to nobody).
      # @return [Boolean] whether the peer closed its end
      def discard_ready
        loop do
          chunk = @io.read_nonblock(READ_SIZE, Channel.scratch, exception: false)
          return false if chunk == :wait_readable
          return true if chunk.nil?
        end
      rescue Errno::ECONNRESET, IOError
        true
      end

      # Says "no more messages" to the peer (it reads EOF after what was
      # sent) and keeps this end readable: the peer's own EOF then tells
      # when it exited, with no polling.
      def close_write
        @io.close_write unless @io.closed?
      rescue IOError, SystemCallError
        nil
      end

      # A Ctrl-C landing inside IO#close must not leave the socket open ({DescriptorClose}).
      def close
        DescriptorClose.close(@io)
      end

      def closed?
        @io.closed?
      end

      private

      def drain
        messages = []
        while (message = next_message)
          messages << message.first
        end
        messages
      end

      # @return [Array(Object), nil] the next message wrapped in an array (a
      #   message may itself be nil), or nil when no whole frame is buffered
      def next_message
        return nil if @buffer.bytesize < HEADER

        length = @buffer.unpack1("N")
        return nil if @buffer.bytesize < HEADER + length

        payload = @buffer.byteslice(HEADER, length)
        # Most reads hold whole frames: the buffer empties and keeps its room.
        if @buffer.bytesize == HEADER + length
          @buffer.clear
        else
          @buffer = @buffer.byteslice(HEADER + length, @buffer.bytesize)
        end
        [Marshal.load(payload)] # standard:disable Security/MarshalLoad -- our own child, over a private socketpair
      end
    end
  end
end
