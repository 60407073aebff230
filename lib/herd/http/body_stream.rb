# frozen_string_literal: true

require_relative "errors"

module Herd
  module HTTP
    # The stream handed to a streaming body (one that responds to #call and
    # not #each): the Rack stream interface over the client socket, counting
    # the bytes written and framing them as chunks when the response is chunked
    # (HTTP/1.1 without a content-length from the application), so that a body
    # cut short by an error is seen as incomplete by the client and the proxy.
    class BodyStream
      CRLF = "\r\n"
      LAST_CHUNK = "0\r\n\r\n"

      # @return [Integer] body bytes written (without chunk framing)
      attr_reader :bytes_written

      # @param io [IO] the client socket
      # @param chunked [Boolean] frame writes as chunks
      def initialize(io, chunked:)
        @io = io
        @chunked = chunked
        @bytes_written = 0
        @finished = false
      end

      # Reads from the client (the request body was already read by herd; what
      # comes now is whatever the client sends next).
      def read(...)
        @io.read(...)
      end

      # @return [String, nil]
      def read_partial(...)
        @io.readpartial(...)
      end
      alias_method :readpartial, :read_partial

      # @return [Integer] bytes written
      def write(*strings)
        raise IOError, "stream finished (close_write or close was called)" if @finished

        strings.sum do |string|
          string = string.to_s
          next 0 if string.empty?

          @chunked ? @io.write(string.bytesize.to_s(16), CRLF, string, CRLF) : @io.write(string)
          @bytes_written += string.bytesize
          string.bytesize
        end
      end

      # @return [self]
      def <<(string)
        write(string)
        self
      end

      # @return [self]
      def flush
        @io.flush
        self
      end

      def close_read
        @io.close_read
      end

      # Ends the response body (the last chunk) and the write side of the socket.
      def close_write
        finish
        @io.close_write
      end

      # Ends the response body and closes the socket.
      def close
        finish
      ensure
        @io.close
      end

      # @return [Boolean]
      def closed?
        @io.closed?
      end

      # The underlying socket, for IO.select and friends.
      # @return [IO]
      def to_io
        @io
      end

      # Writes the last chunk unless done already. Called by herd after the
      # body's #call returns.
      def finish
        return if @finished

        @finished = true
        @io.write(LAST_CHUNK) if @chunked && !@io.closed?
      end
    end
  end
end
