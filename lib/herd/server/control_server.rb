# frozen_string_literal: true

require_relative "../clock"
require_relative "listener"

module Herd
  module Server
    # `control_listen`: the monitor's own small HTTP endpoint, `GET /stats`
    # (JSON) and `GET /metrics` (Prometheus text format), for `herd top`,
    # scrapers and operators.
    #
    # It runs in a thread of the monitor, one connection at a time: the
    # monitor's loop never waits on a slow client, and the answer is built
    # from what the loop and the memory sampler already know (no smaps read
    # per request). A UNIX socket is created 0600: the stats name request
    # lines, which may carry what a URL carries.
    class ControlServer
      # A client gets this long to send its request head.
      READ_TIMEOUT = 2.0
      MAX_HEAD = 8 * 1024
      ROUTES = {
        "/stats" => "application/json",
        "/metrics" => "text/plain; version=0.0.4; charset=utf-8"
      }.freeze

      # @param address [String] "unix:/path", "host:port" or "port"
      # @param render [#call] (path) → the body for a route
      # @return [ControlServer]
      # @raise [ConfigError] when the address cannot be bound
      def self.open(address, render:)
        spec = Listener::Spec.new(address: address, umask: 0o177, backlog: 16).validate!
        listener = Listener.bind(spec)
        File.chmod(0o600, spec.parse[1]) if listener.unix?
        new(listener, render)
      end

      # @return [Listener]
      attr_reader :listener

      def initialize(listener, render)
        @listener = listener
        @render = render
      end

      # @return [String] "unix:/absolute/path" or "host:port", what `herd top` takes
      def address
        local = @listener.socket.local_address
        return "unix:#{File.expand_path(local.unix_path)}" if local.unix?

        "#{local.ipv6? ? "[#{local.ip_address}]" : local.ip_address}:#{local.ip_port}"
      end

      # @return [IO] closed in every child the monitor forks
      def io
        @listener.socket
      end

      # @param on_error [#call] told what went wrong with one exchange
      # @return [self]
      def start(on_error: nil)
        @on_error = on_error
        @thread = Thread.new do
          Thread.current.name = "herd control"
          Thread.current.report_on_exception = false
          serve
        end
        self
      end

      def stop
        @thread&.kill
        @thread&.join(1)
        @listener.close
      end

      private

      def serve
        loop do
          IO.select([@listener.socket])
          client, = @listener.accept
          next unless client

          begin
            exchange(client)
          rescue => e # one client's trouble (IOError, SystemCallError...), never the thread's end
            @on_error&.call(e)
          ensure
            client.close unless client.closed?
          end
        end
      end

      def exchange(client)
        head = read_head(client)
        return unless head

        method, target, version = head.lines.first.to_s.split(" ", 3)
        return respond(client, 400, "text/plain", "bad request\n") unless version&.start_with?("HTTP/1.")
        return respond(client, 405, "text/plain", "GET only\n", "allow: GET, HEAD\r\n") unless %w[GET HEAD].include?(method)

        path = target.split("?", 2).first
        type = ROUTES[path]
        return respond(client, 404, "text/plain", "not found; try #{ROUTES.keys.join(" or ")}\n") unless type

        body = @render.call(path)
        respond(client, 200, type, (method == "HEAD") ? "" : body, length: body.bytesize)
      end

      # @return [String, nil] the request head; nil when the client is too
      #   slow, sends too much or goes away
      def read_head(client)
        head = +""
        deadline = Clock.now + READ_TIMEOUT
        until head.include?("\r\n\r\n") || head.include?("\n\n")
          return nil if head.bytesize > MAX_HEAD

          chunk = client.read_nonblock(4096, exception: false)
          if chunk == :wait_readable
            left = deadline - Clock.now
            return nil if left <= 0 || !client.wait_readable(left)
          elsif chunk.nil?
            return nil
          else
            head << chunk
          end
        end
        head
      end

      def respond(client, status, type, body, extra = "", length: body.bytesize)
        reason = {200 => "OK", 400 => "Bad Request", 404 => "Not Found", 405 => "Method Not Allowed"}.fetch(status)
        client.write("HTTP/1.1 #{status} #{reason}\r\ncontent-type: #{type}\r\ncontent-length: #{length}\r\n" \
          "cache-control: no-store\r\nconnection: close\r\n#{extra}\r\n", body)
      end
    end
  end
end
