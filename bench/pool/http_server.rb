# frozen_string_literal: true

require "socket"

module PoolBench
  # A tiny HTTP/1.1 server on 127.0.0.1 (port 0: the kernel picks one) for
  # the download load: every GET gets the same body after a fixed delay that
  # stands in for the network. It runs in a forked process, so serving never
  # competes with the benchmark for the GVL, and it leaves with exit! (no
  # at_exit hooks of ours run there).
  class HttpServer
    attr_reader :port, :body_size, :latency

    # @param body_size [Integer] bytes in every response body
    # @param latency [Float] seconds the server waits before answering
    def initialize(body_size:, latency:)
      @body_size = body_size
      @latency = latency
    end

    # @return [HttpServer] self, listening
    def start
      server = TCPServer.new("127.0.0.1", 0)
      @port = server.addr[1]
      @pid = fork { serve(server) }
      server.close
      self
    end

    def stop
      return unless @pid

      Process.kill(:TERM, @pid)
      Process.wait(@pid)
      @pid = nil
    rescue Errno::ESRCH, Errno::ECHILD
      @pid = nil
    end

    private

    def serve(server)
      trap(:TERM) { exit!(0) }
      head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n" \
        "Content-Length: #{@body_size}\r\nConnection: close\r\n\r\n"
      body = Random.new(42).bytes(@body_size)
      loop do
        client = server.accept
        Thread.new(client) { |socket| answer(socket, head, body) }
      end
    ensure
      exit!(0)
    end

    def answer(socket, head, body)
      while (line = socket.gets)
        break if line == "\r\n"
      end
      sleep(@latency)
      socket.write(head, body)
    rescue SystemCallError, IOError
      nil # the client went away; nothing to do
    ensure
      socket.close
    end
  end
end
