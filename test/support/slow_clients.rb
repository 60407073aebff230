# frozen_string_literal: true

require "socket"
require "support/server_harness"

module Herd
  # A server with one worker, and clients whose request head never ends
  # (test/server/slow_clients*_test.rb).
  module SlowClients
    include ServerTest

    PARTIAL_HEAD = "GET /slow HTTP/1.1\r\nHost: localhost\r\nX-Slow: "

    def teardown
      @slow&.each { |socket| socket.close unless socket.closed? }
      super
    end

    def start(config)
      serve(config: "workers 1\n#{config}")
    end

    # Opens `count` connections that each sent part of a head (@slow).
    def open_slow(count)
      @slow = Array.new(count) do
        TCPSocket.new("127.0.0.1", @server.port).tap { |socket| socket.write(PARTIAL_HEAD) }
      end
    end
  end
end
