# frozen_string_literal: true

require "socket"
require "rack/utils"
require_relative "errors"
require_relative "http_date"
require_relative "response_headers"
require_relative "body_stream"

module Herd
  module HTTP
    # Writes one response on the client socket: status line, headers (checked
    # first by {ResponseHeaders}), framing, body. Every response says
    # `connection: close`, but for one the caller asked to keep the
    # connection open for ({#keep_alive=}) that herd frames itself and writes
    # whole: the plain response, an Array body with its content-length, a
    # response without a body (HEAD, 204, 304). {#kept?} then
    # says so, and the connection is neither shut down nor closed here.
    #
    # Framing, when the application did not set content-length or
    # transfer-encoding itself:
    # - no body for HEAD, 1xx, 204 and 304 (the body is not iterated);
    # - a body responding to #to_ary (an Array): content-length computed, one write;
    # - a body responding to #to_path (a file): content-length from its size, sent with sendfile (IO.copy_stream);
    # - any other body: chunked for HTTP/1.1, delimited by closing the connection for HTTP/1.0;
    # - a streaming body (#call, not #each): the same, through a {BodyStream}.
    class ResponseWriter
      CRLF = "\r\n"
      CONTINUE = "HTTP/1.1 100 Continue\r\n\r\n"
      LAST_CHUNK = "0\r\n\r\n"
      REASONS = Rack::Utils::HTTP_STATUS_CODES
      CLIENT_GONE = [Errno::EPIPE, Errno::ECONNRESET, Errno::ENOTCONN, Errno::ESHUTDOWN, IOError].freeze
      # A response with this many Array parts or fewer goes out in one write(2).
      MAX_GATHERED_PARTS = 64
      MSG_MORE = defined?(Socket::MSG_MORE) ? Socket::MSG_MORE : nil
      # ASCII-only body parts up to this many bytes in all are copied behind the
      # head: one String and one write instead of a gathering write's arguments.
      MAX_COPIED_BODY = 8 * 1024
      # The send and shutdown of #write_last in C (ext/herd/native/final_send.c),
      # in herd's C extension and off with it ({Extension}).
      FINAL_SEND = (FinalSend if Extension.unused_reason.nil? && defined?(FinalSend))
      # "HTTP/1.1 200 OK\r\n" for each status, made once.
      STATUS_LINES = Hash.new { |lines, status| lines[status] = "HTTP/1.1 #{status} #{REASONS[status]}\r\n".freeze }

      # @return [Integer] body bytes written
      attr_reader :bytes_sent
      # @return [#call, nil] the rack.hijack response header, once the head was written for it
      attr_reader :hijack
      # @return [Integer, nil] the status written, nil before
      attr_reader :status

      # @param io [IO] the client socket
      # @param http11 [Boolean] whether the client speaks HTTP/1.1 (chunked responses)
      # @param head_request [Boolean] whether the request was HEAD (no body)
      # @param fast_path [#response, nil] {ResponseHeaders::FAST_PATH}, or nil for Ruby alone
      def initialize(io, http11: true, head_request: false, fast_path: ResponseHeaders::FAST_PATH)
        @io = io
        @fast_path = fast_path
        @final_send = (FINAL_SEND if fast_path)
        @http11 = http11
        @head_request = head_request
        @bytes_sent = 0
        @committed = false
        @detached = false
        @keep_alive = false
        @kept = false
      end

      # Whether the caller would keep the connection open after this
      # response: asked before the response is written (its head says
      # whether the connection stays).
      attr_writer :keep_alive

      # @return [Boolean] the whole response was written and the connection stays open (see {#keep_alive=})
      def kept?
        @kept
      end

      # Sets what the request allows (once its head is parsed).
      # @param request [Request]
      # @return [self]
      def answering(request)
        @http11 = request.http11?
        @head_request = request.head?
        self
      end

      # @return [Boolean] whether the status line was written: from then on an error can only cut the response short
      def committed?
        @committed
      end

      # Full hijack: the application owns the socket, nothing more is written.
      def detach
        @detached = true
      end

      # @return [Boolean]
      def detached?
        @detached
      end

      # Ends our side of the connection, once: the FIN goes out now (with a
      # segment #write_last held back), whoever else holds the descriptor (a
      # child the application forked during the request), and without the
      # reset that close(2) sends when the client's input was not all read.
      def end_of_response
        return if @ended || @kept

        @ended = true
        @io.shutdown(Socket::SHUT_WR) if @io.respond_to?(:shutdown)
      rescue IOError, SystemCallError
        nil
      end

      # Writes 100 Continue (the client waits for it before sending its body).
      def continue
        write_one(CONTINUE)
      end

      # Writes a 103 Early Hints response (HTTP/1.1 only; ignored once the
      # final response has started or the socket was hijacked).
      # @param headers [Hash] e.g. {"link" => "</app.css>; rel=preload; as=style"}
      # @raise [InvalidResponse] for headers that could not be sent
      def early_hints(headers)
        return if @committed || @detached || !@http11

        write_raw("HTTP/1.1 103 Early Hints\r\n", ResponseHeaders.new(headers).lines, CRLF)
      rescue ClientDisconnected
        nil # the final response will find out
      end

      # Writes a short plain-text response for an error (4xx/5xx).
      # @param status [Integer]
      def error(status)
        reason = REASONS.fetch(status, "Error")
        body = "#{reason}\n"
        commit(status)
        body = "" if @head_request
        write_raw(
          "HTTP/1.1 #{status} #{reason}\r\ncontent-type: text/plain\r\ncontent-length: #{reason.bytesize + 1}\r\n" \
          "date: #{HTTPDate.now}\r\nconnection: close\r\n\r\n",
          body
        )
        @bytes_sent += body.bytesize
      end

      # Writes the application's response. Nothing is written if the status or
      # the headers are invalid. For a partial hijack only the head is written
      # and {#hijack} is set: the caller hands it the socket.
      # @param status [Integer]
      # @param headers [Hash]
      # @param body [#each, #call]
      # @raise [InvalidResponse] nothing was written
      # @raise [ClientDisconnected]
      # @raise [Exception] whatever the body raises while iterated
      def write(status, headers, body)
        unless status.is_a?(Integer) && status.between?(100, 999)
          raise InvalidResponse, "status #{status.inspect} is not an Integer in 100..999"
        end
        return if write_plain(status, headers, body)

        fields = ResponseHeaders.new(headers)
        # What the connection may stay open for: no hijack, no connection
        # header of the application's, a final status (101 switches
        # protocols; a client takes another 1xx for an interim one and waits
        # for more, which the close tells it is not coming); then a body herd
        # frames (see #write_array) or none.
        @keep_alive &&= !fields.hijack && !fields.connection && status >= 200
        if fields.hijack
          write_head(status, fields)
          @hijack = fields.hijack
        elsif @head_request || status < 200 || status == 204 || status == 304
          write_head(status, fields)
          @kept = @keep_alive
        elsif fields.content_length || fields.transfer_encoding
          write_as_is(status, fields, body)
        else
          write_framed(status, fields, body)
        end
      end

      private

      # The usual response (a small Array body, common headers, not HEAD)
      # put together in C ({FieldLines}.response): the very bytes the Ruby
      # code below would write, in one write, without its dozens of calls.
      # @return [Boolean] false: not such a response, nothing was written
      def write_plain(status, headers, body)
        return false if @head_request || !@fast_path

        head = STATUS_LINES[status].dup
        length = @fast_path.response(head, status, headers, body,
          HTTPDate.closing_lines(@keep_alive), @keep_alive) or return false
        commit(status)
        write_whole(head)
        @bytes_sent += length
        true
      end

      # A whole response in one String: the connection's last write, or,
      # kept open, a plain one.
      def write_whole(string)
        return write_last(string) unless @keep_alive

        write_one(string)
        @kept = true
      end

      # The application framed the body itself (content-length or transfer-encoding).
      # The connection stays open only after an Array body whose length is
      # the content-length given and no transfer-encoding: a wrong length
      # would make the client read the next response in the wrong place.
      def write_as_is(status, fields, body)
        path = file_path(body)
        if path && fields.content_length == File.size(path)
          @keep_alive = false
          write_head(status, fields)
          send_file(path, fields.content_length)
        elsif gatherable?(body)
          parts = body.to_ary
          length = parts.sum(&:bytesize)
          @keep_alive &&= !fields.transfer_encoding && fields.content_length == length
          write_head_and_parts(status, head(status, fields, nil), parts, length)
        else
          @keep_alive = false
          write_each_or_stream(status, fields, body)
        end
      end

      # An #each body or a streaming one: chunked when herd frames it for
      # an HTTP/1.1 client, as the application gave it otherwise.
      def write_each_or_stream(status, fields, body, chunked: false)
        if body.respond_to?(:each)
          write_head(status, fields, chunked ? "transfer-encoding: chunked\r\n" : nil)
          body.each { |part| chunked ? write_chunk(part) : write_part(part) }
          write_one(LAST_CHUNK) if chunked
        else
          stream(status, fields, body, chunked: chunked)
        end
      end

      def gatherable?(body)
        return false unless body.respond_to?(:to_ary)

        parts = body.to_ary
        parts.size <= MAX_GATHERED_PARTS && parts.all?(String)
      end

      def write_framed(status, fields, body)
        if body.respond_to?(:to_ary)
          write_array(status, fields, body.to_ary)
        else
          @keep_alive = false
          write_framed_stream(status, fields, body)
        end
      end

      # A file, an #each body or a streaming one: the connection closes after it.
      def write_framed_stream(status, fields, body)
        if (path = file_path(body))
          size = File.size(path)
          write_head(status, fields, "content-length: #{size}\r\n")
          send_file(path, size)
        else
          write_each_or_stream(status, fields, body, chunked: @http11)
        end
      end

      def write_array(status, fields, parts)
        unless parts.all?(String)
          raise InvalidResponse, "body part is a #{parts.find { |p| !p.is_a?(String) }.class}, not a String"
        end

        length = parts.sum(&:bytesize)
        @keep_alive &&= parts.size <= MAX_GATHERED_PARTS
        head = head(status, fields, "content-length: #{length}\r\n")
        if parts.size <= MAX_GATHERED_PARTS
          write_head_and_parts(status, head, parts, length)
        else
          commit(status)
          write_one(head)
          parts.each { |part| write_one(part) }
          @bytes_sent += length
        end
      end

      # Head and body in one write: one syscall, one wake-up of the client.
      def write_head_and_parts(status, head, parts, length)
        commit(status)
        # ASCII-only parts only: appending a String of another encoding with
        # bytes above 127 could raise Encoding::CompatibilityError.
        if length <= MAX_COPIED_BODY && parts.all?(&:ascii_only?)
          parts.each { |part| head << part }
          write_whole(head)
        else
          write_raw(head, *parts)
          @kept = @keep_alive
        end
        @bytes_sent += length
      end

      def commit(status)
        @committed = true
        @status = status
      end

      def stream(status, fields, body, chunked:)
        raise InvalidResponse, "body responds to neither #each nor #call" unless body.respond_to?(:call)

        write_head(status, fields, chunked ? "transfer-encoding: chunked\r\n" : nil)
        stream = BodyStream.new(@io, chunked: chunked)
        begin
          body.call(stream)
          stream.finish
        ensure
          @bytes_sent += stream.bytes_written
        end
      end

      def write_head(status, fields, framing = nil)
        head = head(status, fields, framing)
        commit(status)
        write_one(head)
      end

      def head(status, fields, framing)
        head = STATUS_LINES[status].dup
        head << fields.lines
        head << framing if framing
        # The usual end of a head, one String per second.
        return head << HTTPDate.closing_lines(@keep_alive) unless fields.date || status == 101

        head << "date: " << HTTPDate.now << CRLF unless fields.date
        # 101 Switching Protocols carries the application's "connection: upgrade".
        head << "connection: " << ((status == 101 && fields.connection) || "close") << CRLF unless @keep_alive
        head << CRLF
      end

      def write_chunk(part)
        part = string_part(part)
        return if part.empty?

        write_raw(part.bytesize.to_s(16), CRLF, part, CRLF)
        @bytes_sent += part.bytesize
      end

      def write_part(part)
        part = string_part(part)
        return if part.empty?

        write_one(part)
        @bytes_sent += part.bytesize
      end

      def string_part(part)
        raise InvalidResponse, "body yielded a #{part.class}, not a String" unless part.is_a?(String)

        part
      end

      # @return [String, nil] the file a body stands for (Rack SPEC #to_path)
      def file_path(body)
        return nil unless body.respond_to?(:to_path)

        path = body.to_path
        path if path.is_a?(String) && File.file?(path)
      end

      def send_file(path, length)
        @bytes_sent += IO.copy_stream(path, @io, length)
      rescue *CLIENT_GONE => e
        raise ClientDisconnected, "client went away: #{e.message}"
      end

      # One String: no Array for a splat (two per response otherwise).
      def write_one(string)
        @io.write(string)
      rescue *CLIENT_GONE => e
        raise ClientDisconnected, "client went away: #{e.message}"
      end

      # A whole response in one String, and nothing after it: on TCP, sent
      # with MSG_MORE, so that the kernel holds its last segment, then ended
      # (#end_of_response) with shutdown(SHUT_WR), which sends that segment
      # and the FIN together, in fewer segments per request (docs/HTTP.md,
      # "Responses"). The shutdown, not the close: close(2) on a socket with
      # unread input (a stray CRLF after a body, a pipelined request) sends a
      # reset and drops what the socket still holds, the whole response here.
      # In `ensure`: an exception landing after the send must not leave the
      # response held. With the C extension, the send and the shutdown are one
      # call ({FinalSend}).
      def write_last(string)
        return write_one(string) unless MSG_MORE && @io.is_a?(TCPSocket)

        begin
          if @final_send
            sent = @final_send.call(@io, string)
            return @ended = true if sent == string.bytesize # and shut down
          else
            sent = @io.send(string, MSG_MORE)
          end
          write_one(string.byteslice(sent..)) if sent < string.bytesize
        ensure
          end_of_response
        end
      rescue *CLIENT_GONE => e
        raise ClientDisconnected, "client went away: #{e.message}"
      end

      def write_raw(*strings)
        @io.write(*strings)
      rescue *CLIENT_GONE => e
        raise ClientDisconnected, "client went away: #{e.message}"
      end
    end
  end
end
