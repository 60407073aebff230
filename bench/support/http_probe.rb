# frozen_string_literal: true

require "socket"
require_relative "clock"

module Bench
  # How a driver tells a server is up: a port to give it, and one HTTP
  # request that either gets a status or nothing (yet). Asking beats
  # sleeping a fixed time: a boot takes 1 s or 40 s depending on the app and
  # the machine's load.
  module HttpProbe
    HOST = "127.0.0.1"

    module_function

    # A port nobody listens on now: bind port 0, note the port, release it.
    def free_port
      server = TCPServer.new(HOST, 0)
      server.addr[1]
    ensure
      server&.close
    end

    # One HTTP/1.1 request without a Connection header.
    # @return [Hash, nil] :status and :keep_alive (the server did not say
    #   "Connection: close"), nil when nothing answers yet
    def get(port, path, timeout: 2)
      socket = Socket.tcp(HOST, port, connect_timeout: timeout)
      socket.write("GET #{path} HTTP/1.1\r\nHost: #{HOST}:#{port}\r\n\r\n")
      head = read_head(socket, Clock.now + timeout)
      return nil unless head

      status = head[/\AHTTP\/1\.\d (\d{3})/, 1].to_i
      {status: status, keep_alive: !head.match?(/^connection:\s*close/i)}
    rescue SystemCallError, IOError, SocketError
      nil
    ensure
      socket&.close
    end

    def read_head(socket, deadline)
      head = +""
      until head.include?("\r\n\r\n")
        left = deadline - Clock.now
        return nil if left <= 0 || !socket.wait_readable(left)

        chunk = socket.read_nonblock(4096, exception: false)
        return nil if chunk.nil?

        head << chunk if chunk.is_a?(String)
      end
      head
    end
  end
end
