# frozen_string_literal: true

require_relative "../clock"
require_relative "../server/listener"

module Herd
  module Cluster
    # `control_listen`: the monitor's own small HTTP endpoint, `GET /stats`
    # (JSON) and `GET /metrics` (Prometheus text format), for `herd top`,
    # scrapers and operators.
    #
    # Served from the monitor's loop, never blocking it: the listener and
    # every client are in the loop's IO.select, reads and writes are
    # non-blocking, and a client gets READ_TIMEOUT to send its request head
    # and read the answer before it is dropped. In the loop rather than in a
    # thread because the loop is also where the monitor forks: a client
    # socket accepted by a thread at that moment would be inherited by the
    # new mold, unseen, and the client would wait for an EOF that never
    # comes. From the loop, every open client is known and closed in each
    # child (#ios). The answer is built from what the monitor already knows
    # (its children, the scoreboard, the sampler's latest report): no /proc
    # read per request.
    #
    # A UNIX socket is created 0600: the stats name request lines, which may
    # carry what a URL carries.
    # @api private
    class ControlServer
      READ_TIMEOUT = 2.0
      MAX_HEAD = 8 * 1024
      # Connections served at once; more wait in the listen backlog.
      MAX_CLIENTS = 16
      ROUTES = {
        "/stats" => "application/json",
        "/metrics" => "text/plain; version=0.0.4; charset=utf-8"
      }.freeze
      REASONS = {200 => "OK", 400 => "Bad Request", 404 => "Not Found", 405 => "Method Not Allowed",
                 431 => "Request Header Fields Too Large"}.freeze

      # One connection: what it sent so far, what is left to write to it.
      Client = Struct.new(:socket, :head, :reply, :deadline)

      # @param address [String] "unix:/path", "host:port" or "port"
      # @param render [#call] (path) → the body for a route
      # @param on_error [#call, nil] told what went wrong with one client
      # @return [ControlServer]
      # @raise [ConfigError] when the address cannot be bound
      def self.open(address, render:, on_error: nil)
        spec = Server::Listener::Spec.new(address: address, umask: 0o177, backlog: 64).validate!
        listener = Server::Listener.bind(spec)
        File.chmod(0o600, spec.parse[1]) if listener.unix?
        new(listener, render, on_error)
      end

      def initialize(listener, render, on_error = nil)
        @listener = listener
        @render = render
        @on_error = on_error
        @clients = {}
      end

      # @return [String] "unix:/absolute/path" or "host:port", what `herd top` takes
      def address
        local = @listener.socket.local_address
        return "unix:#{File.expand_path(local.unix_path)}" if local.unix?

        "#{local.ipv6? ? "[#{local.ip_address}]" : local.ip_address}:#{local.ip_port}"
      end

      # @return [Array<IO>] for the loop's IO.select, read side
      def read_ios
        ios = @clients.each_value.reject(&:reply).map(&:socket)
        (@clients.size < MAX_CLIENTS) ? ios << @listener.socket : ios
      end

      # @return [Array<IO>] write side: answers not written in full yet
      def write_ios
        @clients.each_value.select(&:reply).map(&:socket)
      end

      # @return [Array<IO>] every descriptor of ours: a child the monitor
      #   forks closes them all
      def ios
        [@listener.socket] + @clients.keys
      end

      # @return [Boolean] whether `io` is one of ours
      def owns?(io)
        io == @listener.socket || @clients.key?(io)
      end

      # The loop saw `io` ready.
      def ready(io)
        return accept if io == @listener.socket

        client = @clients[io]
        return unless client

        client.reply ? write(client) : read(client)
      rescue IOError, SystemCallError => e
        @on_error&.call(e)
        drop(io)
      end

      # Drops clients past their deadline.
      def expire
        now = Clock.now
        @clients.each_value.select { |client| now > client.deadline }.each { |client| drop(client.socket) }
      end

      def close
        @clients.keys.each { |io| drop(io) }
        @listener.close
      end

      private

      def accept
        while @clients.size < MAX_CLIENTS
          socket, = @listener.accept
          break unless socket

          @clients[socket] = Client.new(socket, +"", nil, Clock.now + READ_TIMEOUT)
        end
      end

      def read(client)
        chunk = client.socket.read_nonblock(4096, exception: false)
        return if chunk == :wait_readable
        return drop(client.socket) if chunk.nil? # gone before asking

        client.head << chunk
        if client.head.include?("\r\n\r\n") || client.head.include?("\n\n")
          answer(client)
        elsif client.head.bytesize > MAX_HEAD
          reply(client, 431, "text/plain", "request head too large\n")
        end
      end

      def answer(client)
        method, target, version = client.head.lines.first.to_s.split(" ", 3)
        return reply(client, 400, "text/plain", "bad request\n") unless version&.start_with?("HTTP/1.")
        unless %w[GET HEAD].include?(method)
          return reply(client, 405, "text/plain", "GET only\n", "allow: GET, HEAD\r\n")
        end

        type = ROUTES[target.split("?", 2).first]
        return reply(client, 404, "text/plain", "not found; try #{ROUTES.keys.join(" or ")}\n") unless type

        body = @render.call(target.split("?", 2).first)
        reply(client, 200, type, body, head_only: method == "HEAD")
      end

      def reply(client, status, type, body, extra = "", head_only: false)
        client.reply = "HTTP/1.1 #{status} #{REASONS.fetch(status)}\r\ncontent-type: #{type}\r\n" \
          "content-length: #{body.bytesize}\r\ncache-control: no-store\r\nconnection: close\r\n#{extra}\r\n" \
          "#{body unless head_only}".b
        write(client)
      end

      def write(client)
        written = client.socket.write_nonblock(client.reply, exception: false)
        return if written == :wait_writable

        client.reply = client.reply.byteslice(written..)
        drop(client.socket) if client.reply.empty?
      end

      def drop(io)
        @clients.delete(io)
        io.close unless io.closed?
      end
    end
  end
end
