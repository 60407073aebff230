# frozen_string_literal: true

require_relative "options"
require_relative "parser"
require_relative "env_builder"
require_relative "error_log"
require_relative "transaction"
require_relative "connection"

module Herd
  module HTTP
    # Serves one request per accepted socket with a Rack application.
    #
    #   handler = Herd::HTTP::Handler.new(app, Herd::HTTP::Options.new(max_body: 10 << 20))
    #   exchange = handler.call(socket, remote_addr: "127.0.0.1", server_name: "localhost",
    #     server_port: 8080) do |method, target|
    #     # the head is parsed, the body and the application are next
    #   end
    #
    # One handler serves many connections, one at a time (it keeps the
    # parser's cache of header names between them).
    class Handler
      # @return [#call] the Rack application
      attr_reader :app
      # @return [Options]
      attr_reader :options
      # @return [Parser]
      attr_reader :parser
      # @return [EnvBuilder]
      attr_reader :env_builder
      # @return [ErrorLog]
      attr_reader :log

      # @param app [#call] a Rack application
      # @param options [Options]
      def initialize(app, options = Options.new)
        raise ArgumentError, "the application must respond to #call" unless app.respond_to?(:call)

        @app = app
        @options = options
        @parser = Parser.new(max_header_count: options.max_header_count)
        @env_builder = EnvBuilder.new(options)
        @log = ErrorLog.new(options.logger, options.errors)
      end

      # Reads one request from `client`, answers it and closes the socket
      # (unless the application hijacked it). Never raises for what the client
      # or the application does: that ends up in the exchange's error and the
      # log.
      #
      # @param client [IO] an accepted socket
      # @param remote_addr [String] REMOTE_ADDR
      # @param server_name [String] SERVER_NAME
      # @param server_port [Integer, String] SERVER_PORT (a String saves a conversion per request)
      # @param url_scheme [String] rack.url_scheme ("http" or "https")
      # @param on_request [#call, nil] called with (method, target) once the head is parsed; a block
      #   does the same (a callable made once saves a Proc per request)
      # @param reader [SocketReader, nil] the client's reader when bytes were read already (see
      #   {SocketReader#head_decided?}); its head deadline stands
      # @param request [Request, nil] the head {HeadScanner.receive} read and parsed already, its
      #   headers the env begun from {EnvBuilder#template}, which must have been made with this
      #   call's server_name, server_port and url_scheme (the env has the template's)
      # @param keep_alive [Boolean] the caller would keep the connection open for another request
      #   (see {Options#keep_alive}); the exchange says whether it did
      # @yieldparam method [String] called once the head is parsed, before the body is read and the application runs
      # @yieldparam target [String]
      # @return [Exchange]
      def call(client, remote_addr:, server_name:, server_port:, url_scheme: "http", on_request: nil, reader: nil,
        request: nil, keep_alive: false, &block)
        on_request ||= block
        connection = Connection.new(remote_addr, server_name, server_port.to_s, url_scheme)
        Transaction.new(self, client, connection, on_request, reader, request, keep_alive).run
      end
    end
  end
end
