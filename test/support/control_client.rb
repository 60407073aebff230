# frozen_string_literal: true

require "json"
require "socket"
require "support/waiting"

module Herd
  # GETs from a server's control endpoint (control_listen) in tests.
  module ControlClient
    # @param address [String] "unix:/path" or "host:port"
    # @return [Array(Integer, String, String)] status, head, body
    def control_get(address, path, method: "GET")
      socket = address.start_with?("unix:") ? UNIXSocket.new(address.delete_prefix("unix:")) : TCPSocket.new(*address.split(":"))
      socket.write("#{method} #{path} HTTP/1.1\r\nHost: herd\r\n\r\n")
      head, body = socket.read.split("\r\n\r\n", 2)
      [Integer(head[/\AHTTP\/1\.1 (\d{3})/, 1]), head, body]
    ensure
      socket&.close
    end

    # @return [Hash] the /stats document
    def control_stats(address)
      status, _, body = control_get(address, "/stats")
      raise "GET /stats answered #{status}" unless status == 200

      JSON.parse(body)
    end

    # Polls /stats until the block is true of it.
    # @return [Hash] that document
    def wait_for_stats(address, timeout: 20, what: "a /stats document")
      stats = nil
      Waiting.wait_until(what, timeout: timeout, interval: 0.05, detail: -> { "last: #{JSON.pretty_generate(stats)}" }) do
        stats = control_stats(address)
        stats if yield(stats)
      end
    end
  end
end
