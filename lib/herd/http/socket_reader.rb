# frozen_string_literal: true

require_relative "../clock"

require "io/wait"
require_relative "errors"

module Herd
  module HTTP
    # Buffered, deadline-aware reads from one client socket.
    #
    # Reads use read_nonblock + wait_readable so a slow client costs a timeout,
    # never a worker blocked forever. The buffer holds what was read past the
    # head; body reads take from it first and then ask the socket for no more
    # than the body still needs, so nothing after the request is consumed from
    # the socket by a body read.
    class SocketReader
      READ_SIZE = 16 * 1024
      BODY_READ_SIZE = 64 * 1024
      HEAD_END = "\r\n\r\n"
      CRLF = "\r\n"
      # A bare CR or LF (RFC 9112 §2.2 allows refusing them; they are how
      # parsers are made to disagree about where a line ends).
      BARE_LINE_END = /\r(?=[^\n])|(?<!\r)\n/n
      # The buffer when nothing is buffered: the next read replaces it.
      EMPTY = String.new(encoding: Encoding::BINARY).freeze
      # RFC 9112 §2.2: a server SHOULD ignore at least one empty line (CRLF)
      # before a request line; clients send one after a POST body. herd
      # drops this many before each head (HeadScanner.receive too, its
      # MAX_EMPTY_LINES); one more gets 400. A bare LF is no empty line.
      MAX_EMPTY_LINES = 4
      # What a client may leave after a body without starting a next request.
      EMPTY_LINES = /\A(?:\r\n){1,#{MAX_EMPTY_LINES}}\z/n

      # The buffer socket reads land in, one per thread (per fiber), reused
      # by every reader. A read without one allocates a READ_SIZE string
      # each time, which keeps its 16 KiB capacity after a short read: for
      # a small request, most of the C memory a worker allocates
      # (docs/HTTP.md, "The hot path"), and with no GC for hundreds of
      # requests it piles up in pages of the worker's own.
      # What is read is copied out of it, at its size.
      # @return [String]
      def self.scratch
        Thread.current[:herd_socket_reader_scratch] ||= String.new(capacity: READ_SIZE, encoding: Encoding::BINARY)
      end

      # @param io [IO] the client socket (anything with read_nonblock and wait_readable)
      # @param timeout [Numeric] seconds (see {Options#read_timeout})
      # @param idle [Numeric, nil] for a connection kept open after a
      #   response ({Options#keep_alive}): seconds it may stay silent; once
      #   it is over with nothing received, {#read_head} returns nil (the
      #   connection ends without a 408), and the head's `timeout` starts
      #   with its first byte
      def initialize(io, timeout, idle: nil)
        @io = io
        @timeout = timeout
        @buffer = EMPTY
        @received = false
        @idle = !idle.nil?
        # The head's clock starts when the reader is made (at accept): a
        # worker holding a slow client's connection counts from then too.
        @head_deadline = Clock.now + (idle || timeout)
        @scanned = 0
        @ended = false
        # Empty lines at the buffer's start are dropped (none of the head is there yet).
        @skipping = true
        @empty_lines = 0
        @head_taken = false
      end

      # @return [Float] when the whole head must be there ({Clock.now} seconds)
      attr_reader :head_deadline

      # Starts the buffer with what was read from the socket already
      # ({HeadScanner.receive}'s bytes when it did not parse them).
      # @param data [String] binary, not frozen: the buffer from now on
      # @return [self]
      def received(data)
        append(data)
        self
      end

      # Reads what the socket has now, without waiting, and says whether
      # {#read_head} can run without waiting: the head is complete, or it can
      # be refused already (invalid so far, connection closed or reset, time
      # is up). A worker holds connections for which this is false and serves
      # others meanwhile.
      # @return [Boolean]
      def head_decided?(max_request_line, max_header_bytes)
        return true if @ended
        unless @buffer.empty? # the first look, usually: nothing to check yet
          return true if @buffer.index(HEAD_END, @scanned)

          check_partial_head(max_request_line, max_header_bytes, @scanned)
          @scanned = [@buffer.bytesize - 3, 0].max
        end
        data = @io.read_nonblock(READ_SIZE, SocketReader.scratch, exception: false)
        return @ended = true if data.nil? # EOF: read_head says what it means
        return Clock.now >= @head_deadline unless data.is_a?(String) # :wait_readable (or TLS's :wait_writable)

        append(data)
        @buffer.index(HEAD_END, @scanned) ? true : head_decided_without_reading(max_request_line, max_header_bytes)
      rescue RequestError, SystemCallError, IOError
        @ended = true # read_head raises the same again, or ClientDisconnected
      end

      # Ends the head's time now: {#read_head} answers 408 unless the head
      # is complete (the worker makes room for a newer connection).
      # @param reason [String] for the 408's log line
      # @param at [Float] the new deadline ({Clock.now} seconds), if earlier than the current one
      def expire_head!(reason, at: Clock.now)
        return if at >= @head_deadline

        @head_deadline = at
        @expired_because = reason
      end

      # @return [Boolean] whether any byte was received
      def received?
        @received
      end

      # @return [Boolean] whether bytes are buffered that no read took yet
      #   (after a request: the start of the next one)
      def buffered?
        !@buffer.empty?
      end

      # After a request: whether bytes of a next one were read already
      # (pipelining). Empty lines alone, MAX_EMPTY_LINES at most, are not
      # a request: they are dropped (RFC 9112 §2.2), so that the CRLF a
      # client sends after a POST body does not end a kept connection.
      # @return [Boolean]
      def pipelined?
        return false if @buffer.empty?
        return true unless EMPTY_LINES.match?(@buffer)

        @buffer = EMPTY
        false
      end

      # @return [Boolean] whether this reader waits on a kept connection
      #   that has not sent its next request yet (see `idle:`)
      def idle?
        @idle
      end

      # Reads up to and including the empty line that ends a request head.
      # The whole head must arrive within one timeout (a slowloris defence).
      # @return [String, nil] the head (binary), nil if the client closed before sending anything
      # @raise [RequestError] 414, 431, 400 (bare CR/LF, EOF inside the head), 408
      def read_head(max_request_line, max_header_bytes)
        if @head_taken # another head on this reader (tests read pipelined ones): its empty lines go too
          @head_taken = false
          @skipping = true
          @empty_lines = 0
          skip_empty_lines
        end
        from = @scanned
        loop do
          skip_empty_lines if @skipping # refuses one too many
          if (ending = @buffer.index(HEAD_END, from))
            head = take(ending + 4)
            @scanned = 0 # what follows is another head (tests read pipelined ones)
            @head_taken = true
            @expired_because = nil
            check_head_size(head, head.index(CRLF), max_request_line, max_header_bytes)
            return head
          end
          unless @buffer.empty?
            check_partial_head(max_request_line, max_header_bytes, from)
            from = [@buffer.bytesize - 3, 0].max
          end
          # The deadline read each time: a kept connection's changes with its first byte.
          next if fill(@head_deadline)
          return nil unless @received

          raise RequestError.new(400, "connection closed inside the request head")
        end
      rescue RequestError => e
        # A kept connection silent for its whole idle time just ends.
        raise unless @idle && e.status == 408

        nil
      end

      # Reads a trailer section (after the last chunk): a CRLF alone, or field
      # lines and a CRLF. Like a head, it must arrive within one timeout.
      # @return [String, nil] the field lines with the final CRLF, nil if there were none
      # @raise [RequestError] 431 above max_bytes, 400 (bare CR/LF, EOF), 408
      def read_trailer_section(max_bytes)
        deadline = Clock.now + @timeout
        from = 0
        loop do
          return take(2) && nil if @buffer.start_with?(CRLF)

          if (ending = @buffer.index(HEAD_END, from))
            section = take(ending + 4)
            if section.bytesize - 2 > max_bytes
              raise RequestError.new(431, "trailer section larger than #{max_bytes} bytes")
            end

            return section
          end
          if @buffer.bytesize > max_bytes + 1
            raise RequestError.new(431, "trailer section larger than #{max_bytes} bytes")
          end
          raise RequestError.new(400, "bare CR or LF in the trailer section") if @buffer.index(BARE_LINE_END, from)

          from = [@buffer.bytesize - 3, 0].max
          fill(deadline) or raise RequestError.new(400, "connection closed inside the trailer section")
        end
      end

      # Reads a line ending in CRLF (a chunk-size line).
      # @return [String] the line without CRLF
      # @raise [RequestError] 400 for a longer line, a bare CR/LF or EOF; 408
      def read_line(max_length)
        loop do
          if (ending = @buffer.index(CRLF))
            raise RequestError.new(400, "line longer than #{max_length} bytes") if ending > max_length

            line = take(ending + 2).byteslice(0, ending)
            raise RequestError.new(400, "bare CR or LF") if line.match?(/[\r\n]/n)

            return line
          end
          raise RequestError.new(400, "line longer than #{max_length} bytes") if @buffer.bytesize > max_length + 1
          raise RequestError.new(400, "bare CR or LF") if @buffer.match?(BARE_LINE_END)

          fill_idle
        end
      end

      # Reads exactly `length` bytes, yielding them in pieces as they come.
      # @yieldparam data [String]
      # @raise [RequestError] 400 on EOF, 408
      def read_exactly(length)
        if @buffer.bytesize.positive?
          piece = take([length, @buffer.bytesize].min)
          length -= piece.bytesize
          yield piece
        end
        while length.positive?
          piece = read_some([length, BODY_READ_SIZE].min)
          length -= piece.bytesize
          yield piece
        end
      end

      # Reads the CRLF that must follow chunk data.
      # @raise [RequestError] 400 if something else is there
      def read_crlf
        fill_idle until @buffer.bytesize >= 2
        raise RequestError.new(400, "chunk data not followed by CRLF") unless take(2) == CRLF
      end

      # After an error response: ends our side of the connection (FIN right
      # after the response), then reads and drops what the client has already
      # sent, without waiting. Closing a socket with unread input makes the
      # kernel send a reset, which can destroy the response before the client
      # reads it; a proxy in front would report a reset instead of our 4xx.
      # @param limit [Integer] bytes at most
      def discard_available(limit = 64 * 1024)
        @buffer = EMPTY
        @io.close_write if @io.respond_to?(:close_write)
        while limit.positive?
          data = @io.read_nonblock([limit, BODY_READ_SIZE].min, exception: false)
          break unless data.is_a?(String)

          limit -= data.bytesize
        end
      rescue IOError, SystemCallError
        nil
      end

      private

      def check_head_size(head, line_end, max_request_line, max_header_bytes)
        raise RequestError.new(414, "request line longer than #{max_request_line} bytes") if line_end > max_request_line
        return if head.bytesize - line_end - 4 <= max_header_bytes

        raise RequestError.new(431, "header section larger than #{max_header_bytes} bytes")
      end

      # Checks only from `from` on (what arrived since the last check, and the
      # last bytes before it): a client sending its head a byte at a time must
      # not make each read rescan everything.
      def check_partial_head(max_request_line, max_header_bytes, from)
        skip_empty_lines if @skipping # refuses one too many
        line_end = @buffer.index(CRLF)
        if line_end.nil?
          # The line may end with the CR of its CRLF.
          if @buffer.bytesize > max_request_line + 1
            raise RequestError.new(414, "request line longer than #{max_request_line} bytes")
          end
        else
          # Up to "\r\n\r" of the end may be here.
          check_head_size(@buffer, line_end, max_request_line, max_header_bytes - 1)
        end
        raise RequestError.new(400, "bare CR or LF in the request head") if @buffer.index(BARE_LINE_END, from)
      end

      # Removes and returns the first `length` bytes of the buffer.
      def take(length)
        if length == @buffer.bytesize # the usual case: a head and nothing after it
          taken = @buffer
          @buffer = EMPTY
          return taken
        end
        taken = @buffer.byteslice(0, length)
        @buffer = @buffer.byteslice(length, @buffer.bytesize - length)
        taken
      end

      # @return [String] up to `max` bytes, from the buffer or the socket (idle timeout)
      def read_some(max)
        loop do
          data = @io.read_nonblock(max, exception: false)
          return data if data.is_a?(String)
          raise RequestError.new(400, "connection closed inside the request body") if data.nil?

          wait(data, Clock.now + @timeout)
        end
      rescue SystemCallError => e # ECONNRESET, ETIMEDOUT, EHOSTUNREACH...
        raise ClientDisconnected, e.message
      end

      def append(data)
        # A copy of its own (scratch is read into again), made without the
        # Hash that a `capacity:` keyword costs.
        @buffer.empty? ? (@buffer = EMPTY.b << data) : @buffer << data
        skip_empty_lines(refuse: false) if @skipping # read_head refuses one too many
        return if @buffer.empty? # empty lines alone: nothing of a request yet (a kept connection stays idle)

        @received = true
        if @idle # a kept connection's next request begins: the head's own time from now
          @idle = false
          now = Clock.now
          # Not once the idle time is over (the worker was busy) or cut
          # short: a byte sent late must not buy a whole read_timeout in
          # the worker's read_head.
          @head_deadline = now + @timeout unless @expired_because || now >= @head_deadline
        end
      end

      # Drops the empty lines (CRLF) before a head, MAX_EMPTY_LINES at
      # most: one more is refused (or left in place, for read_head to
      # refuse). A CR alone may be the start of one.
      # @raise [RequestError] 400
      def skip_empty_lines(refuse: true)
        while @buffer.start_with?(CRLF)
          if @empty_lines == MAX_EMPTY_LINES
            return unless refuse

            raise RequestError.new(400, "more than #{MAX_EMPTY_LINES} empty lines before the request line")
          end

          @empty_lines += 1
          take(2)
        end
        @skipping = false unless @buffer.empty? || @buffer == "\r"
      end

      # After a read: whether what is buffered can be refused already.
      def head_decided_without_reading(max_request_line, max_header_bytes)
        check_partial_head(max_request_line, max_header_bytes, @scanned)
        @scanned = [@buffer.bytesize - 3, 0].max
        false
      end

      # Reads more into the buffer, waiting at most `timeout` seconds for it.
      def fill_idle
        fill(Clock.now + @timeout) or raise RequestError.new(400, "connection closed inside the request")
      end

      # @return [Boolean] false at EOF
      def fill(deadline)
        loop do
          data = @io.read_nonblock(READ_SIZE, SocketReader.scratch, exception: false)
          if data.is_a?(String)
            append(data)
            return true
          end
          return false if data.nil?

          wait(data, deadline)
        end
      rescue SystemCallError => e
        raise ClientDisconnected, e.message
      end

      # TLS sockets may need to write in order to read.
      def wait(what, deadline)
        remaining = deadline - Clock.now
        ready = remaining.positive? &&
          ((what == :wait_writable) ? @io.wait_writable(remaining) : @io.wait_readable(remaining))
        raise RequestError.new(408, @expired_because || "timed out waiting #{@timeout} s for the client") unless ready
      end
    end
  end
end
