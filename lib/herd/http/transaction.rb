# frozen_string_literal: true

require_relative "../clock"

require_relative "errors"
require_relative "exchange"
require_relative "socket_reader"
require_relative "body_reader"
require_relative "response_writer"
require_relative "empty_input"

module Herd
  module HTTP
    # One request on one accepted socket, from the first byte to the close:
    # read and parse the head, read the body, run the application, write the
    # response, run rack.response_finished. Built by {Handler#call}, used once.
    #
    # Error policy: what the client does wrong gets its 4xx and a closed
    # connection; what the application does wrong gets a 500 (or, once the
    # response has started, a cut-short response) and a log line with the
    # backtrace. Neither raises out of {#run}. Signals, `exit` and herd's own
    # bugs do.
    class Transaction
      # What an application may raise and herd answers with 500. SystemExit,
      # SignalException and NoMemoryError go up to the worker.
      APP_ERRORS = [StandardError, ScriptError, SystemStackError].freeze

      # @param handler [Handler] the app, options, parser, env builder and log
      # @param client [IO]
      # @param connection [Connection] remote address, server name and port, URL scheme
      # @param on_request [#call, nil] called with (method, target) once the head is parsed
      # @param reader [SocketReader, nil] the one that read the first bytes already (a worker's held connection)
      # @param request [Request, nil] a head read and parsed in C already ({HeadScanner.receive}), its env begun
      # @param keep_alive [Boolean] the caller would keep the connection open after the response
      def initialize(handler, client, connection, on_request, reader = nil, request = nil, keep_alive = false)
        @handler = handler
        @options = handler.options
        @log = handler.log
        @client = client
        @connection = connection
        @on_request = on_request
        @reader = reader
        @request = request
        @env_begun = !request.nil?
        @keep_alive = keep_alive
        @writer = ResponseWriter.new(client)
        @exchange = Exchange.new
        @exchange.bytes_sent = 0
        @exchange.hijacked = false
        @exchange.kept_alive = false
      end

      # @return [Exchange]
      def run
        started = Clock.now
        serve if receive
        @exchange
      ensure
        @exchange.bytes_sent = @writer.bytes_sent
        @exchange.status ||= @writer.status
        @exchange.kept_alive = kept?
        finish_connection
        @exchange.duration = Clock.now - started
      end

      # env["rack.hijack"] is the transaction itself (one object less per
      # request than a Method): the application takes the raw socket before
      # any response.
      # @return [IO] the client socket, the application's to close
      def call
        @writer.detach
        @exchange.hijacked = true
        @env["rack.hijack_io"] = @client # Rack 2
        @client
      end

      private

      # Made only when needed: a head received in C with no body needs none.
      def reader
        @reader ||= SocketReader.new(@client, @options.read_timeout)
      end

      # @return [Boolean] whether a complete request was read
      def receive
        unless @request
          head = reader.read_head(@options.max_request_line, @options.max_header_bytes) or return false
          @request = @handler.parser.parse(head)
        end
        @writer.answering(@request)
        @exchange.method = @request.method
        @exchange.target = @request.target
        @on_request&.call(@request.method, @request.target)
        read_body
        @writer.keep_alive = keep_alive?
        true
      rescue RequestError => e
        refuse(e)
        false
      rescue ClientDisconnected => e
        @exchange.error = e
        @log.line("client #{@connection.remote_addr} went away#{request_label}: #{e.message}")
        false
      end

      # Whether the connection may stay open after the response: the
      # caller would keep it, the client speaks HTTP/1.1 and did not ask
      # for the close, and nothing of a next request was read already
      # (pipelining: the connection closes after this response instead;
      # empty lines after a body are no request).
      def keep_alive?
        return false unless @keep_alive && @request.http11?
        return false if @reader&.pipelined?

        connection = @request.headers["HTTP_CONNECTION"]
        connection.nil? || !connection.match?(CLOSE_TOKEN)
      end

      CLOSE_TOKEN = /(?:\A|,)[ \t]*close[ \t]*(?:,|\z)/i

      def read_body
        return @input_size = 0 unless @request.body?

        body_reader = BodyReader.new(reader, @handler.parser, @options)
        body_reader.check_length(@request)
        # Sent before reading, whether or not the application will read the body:
        # the body is read before the application runs (see BodyReader).
        @writer.continue if @request.expect_continue && @request.body? && @request.http11?
        @input, @input_size, @trailers = body_reader.read(@request)
      end

      def refuse(error)
        @exchange.error = error
        @log.line("#{error.status} #{ResponseWriter::REASONS[error.status]} " \
          "for #{@connection.remote_addr}#{request_label}: #{error.message}")
        @writer.error(error.status)
        reader.discard_available
      rescue ClientDisconnected
        nil
      end

      def serve
        input = @input || EmptyInput::INSTANCE
        @env = if @env_begun
          @handler.env_builder.complete(@request, input, @connection)
        else
          @handler.env_builder.build(@request, input, @input_size, @trailers, @connection)
        end
        @env["rack.hijack"] = self
        @env["rack.early_hints"] = @writer.method(:early_hints) if @options.early_hints && @request.http11?
        begin
          status, headers, body = @handler.app.call(@env)
        rescue *APP_ERRORS => e
          return app_failed(e)
        end
        respond(status, headers, body)
      end

      def respond(status, headers, body)
        error = nil
        unless @writer.detached?
          @writer.write(status, headers, body)
          partial_hijack if @writer.hijack
        end
      rescue InvalidResponse => e
        error = e
        @log.line("invalid response to #{request_label(prefix: "")}: #{e.message}")
        fail_response
      rescue ClientDisconnected => e
        error = e
        @log.line("client #{@connection.remote_addr} went away#{request_label}: #{e.message}")
      rescue *APP_ERRORS => e
        error = e
        @log.exception("application error while sending #{request_label(prefix: "")}", e)
        fail_response
      ensure
        end_connection
        close_body(body)
        @exchange.error ||= error
        response_finished(status, headers, error)
      end

      # The response is whole, or cut short: the client gets its end now,
      # not after body.close and rack.response_finished, which may take the
      # application a while. A hijacked socket is the application's.
      def end_connection
        return if @exchange.hijacked || @writer.detached? || kept?

        @writer.end_of_response
        close_quietly(@client)
      end

      # Partial hijack: the head is written, the application gets the socket.
      def partial_hijack
        @exchange.hijacked = true
        @writer.hijack.call(@client)
      rescue *APP_ERRORS
        @exchange.hijacked = false # it failed: herd closes the socket
        raise
      end

      def app_failed(error)
        @exchange.error = error
        @log.exception("application error in #{request_label(prefix: "")}", error)
        fail_response
        end_connection
        response_finished(nil, nil, error)
      end

      # A 500 if nothing was written yet; otherwise the response is cut short by closing.
      def fail_response
        @writer.error(500) unless @writer.committed? || @writer.detached?
      rescue ClientDisconnected
        nil
      end

      def close_body(body)
        body.close if body.respond_to?(:close)
      rescue *APP_ERRORS => e
        @exchange.error ||= e
        @log.exception("body.close raised in #{request_label(prefix: "")}", e)
      end

      # rack.response_finished: in reverse order of registration (Rack SPEC).
      def response_finished(status, headers, error)
        callbacks = @env["rack.response_finished"]
        return unless callbacks.respond_to?(:reverse_each)

        callbacks.reverse_each do |callback|
          callback.call(@env, status, headers, error)
        rescue *APP_ERRORS => e
          @log.exception("rack.response_finished callback raised in #{request_label(prefix: "")}", e)
        end
      end

      def finish_connection
        return if @exchange.hijacked

        close_quietly(@input) if @input # a spooled body's Tempfile, whatever becomes of the connection
        close_quietly(@client) unless @exchange.kept_alive
      end

      # The response went whole and the connection stays open, unless
      # something went wrong after it (an error ends the connection).
      def kept?
        @writer.kept? && @exchange.error.nil?
      end

      def close_quietly(io)
        io&.close
      rescue IOError, SystemCallError
        nil
      end

      def request_label(prefix: " in ")
        return "" unless @request

        "#{prefix}#{@request.method} #{@request.target[0, 200]}"
      end
    end
  end
end
