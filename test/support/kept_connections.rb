# frozen_string_literal: true

require "socket"
require "timeout"

module Herd
  # Raw connections to a test server that stay open between requests (http
  # keep_alive), closed after each test.
  module KeptConnections
    def connect(server)
      TCPSocket.new("127.0.0.1", server.port).tap { |socket| (@sockets ||= []) << socket }
    end

    def teardown
      @sockets&.each { |socket| socket.close unless socket.closed? }
      super
    end

    # One response read by its content-length (the connection may stay open).
    # @return [Array(String, String)] head, body
    def read_response(socket)
      head = +""
      Timeout.timeout(10) { head << socket.readpartial(1) until head.end_with?("\r\n\r\n") }
      length = head[/^content-length: (\d+)\r$/i, 1] or return [head, Timeout.timeout(10) { socket.read }]
      [head, Timeout.timeout(10) { socket.read(Integer(length)) }]
    end
  end
end
