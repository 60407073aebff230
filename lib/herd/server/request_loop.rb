# frozen_string_literal: true

require_relative "../clock"
require_relative "../extension"
require_relative "../heap/low_priority"
require_relative "access_log"
require_relative "pending_connections"

module Herd
  module Server
    # A worker's HTTP work: accepts connections and serves one request at a
    # time. The worker's control messages and signals are taken between
    # requests ({Cluster::Worker#take_control}), so a request is never interrupted by
    # them. A connection whose request head is not all there yet is held
    # ({PendingConnections}) and watched with the listeners, so slow clients
    # never stand between the application and the clients that are ready.
    # @api private
    class RequestLoop
      # Seconds a stopping worker still gives the heads of the connections it holds.
      HEAD_GRACE = 2
      # rack.url_scheme of a worker's connections (TLS ends in front of herd),
      # in the env template and the Handler's connection alike.
      URL_SCHEME = "http"

      # @param worker [Cluster::Worker] the process this loop runs in
      # @param app [#call]
      # @param listeners [Array<Listener>]
      # @param context [Cluster::Context]
      def initialize(worker, app, listeners, context)
        @worker = worker
        @app = app
        @listeners = listeners
        @context = context
        options = HTTP::Options.new(**context.config.http_options)
        @handler = HTTP::Handler.new(app, options)
        @pending = PendingConnections.new(options.max_pending_heads)
        @read_timeout = options.read_timeout
        @keep_alive = options.keep_alive
        @max_request_line = options.max_request_line
        @max_header_bytes = options.max_header_bytes
        @max_header_count = options.max_header_count
        @on_request = worker.method(:busy) # made once: a block would be a new Proc per request
        @access_log = AccessLog.open(context.config.access_log)
        use_c_extension
      end

      # The `warmup` requests, before any client's (see Warmup): the pages
      # they write are copied now, while the monitor still counts this
      # worker as starting. A surge replacement is waited on by no one (the
      # worker it replaces serves meanwhile), so with `prepare_heap nice: N`
      # it warms up at nice N like a mold's preparation, and takes the CPU
      # the serving workers leave.
      # @return [String, nil] the line to log
      def warm_up(surge:)
        warmup = @context.config.warmup
        return unless warmup&.workers

        line, outcome = Heap::LowPriority.run(surge ? @context.config.heap_nice : nil) { warmup.run(@app) }
        outcome ? "#{line} #{outcome}" : line
      end

      # Serves until the worker stops, then finishes the connections it holds.
      def run
        sockets = @listeners.to_h { |listener| [listener.socket, listener] }
        own = sockets.keys + @worker.control_ios
        until @worker.stopping?
          watched = @pending.empty? ? own : own + @pending.clients
          ready, = IO.select(watched, nil, nil, @pending.wait_at_most(1))
          serve_expired unless @pending.empty?
          next @worker.idle unless ready

          ready.each do |io|
            break if @worker.stopping?

            if @worker.take_control(io) then next
            elsif (listener = sockets[io]) then accept(listener)
            elsif (pending = @pending[io]) then continue_pending(pending)
            end
          end
        end
        finish_pending
      end

      # A promotion forks the next mold between two requests: nothing to pause.
      def forking
        yield
      end

      # In the new mold forked from this worker: its workers open their own
      # access log, and the connections held here are this worker's (their
      # clients would never see this worker's close).
      def leave
        @access_log&.close
        @pending.close_all
      end

      private

      # herd's C extension, when built and not switched off
      # (HERD_C_EXTENSION=0): accept on TCP listeners, a connection's first
      # read and its head's parse into the env (HeadScanner.receive, from an
      # env template per listener), the scoreboard's writes (the HTTP layer
      # uses its own parts by itself).
      def use_c_extension
        c_extension = Extension.unused_reason.nil?
        @listeners.each { |listener| listener.accept_with(TCPAccept) } if c_extension && defined?(TCPAccept)
        @worker.scoreboard&.write_with(Cluster::ScoreboardSlots) if c_extension && defined?(Cluster::ScoreboardSlots)
        return unless c_extension && HTTP::HeadScanner.respond_to?(:receive)

        @env_templates = @listeners.to_h do |listener|
          [listener, @handler.env_builder.template(listener.host, listener.port_string, URL_SCHEME)]
        end
      end

      # A stop is graceful for connections already accepted: closing one
      # whose request is on its way would reset its client (a HUP reload
      # under load did). Their heads get HEAD_GRACE more seconds at most,
      # then 408; nothing new is accepted.
      def finish_pending
        @pending.close_idle # kept connections with no request under way
        @pending.hurry(HEAD_GRACE, "the worker is stopping and the request head was not complete #{HEAD_GRACE} s later")
        until @pending.empty?
          ready, = IO.select(@pending.clients, nil, nil, @pending.wait_at_most(HEAD_GRACE))
          serve_expired
          ready&.each { |io| (pending = @pending[io]) && continue_pending(pending) }
        end
      end

      # Under load the next connection is usually waiting already, its head
      # with it: take it without another IO.select, until there is none or
      # we must stop. While connections are held, back to IO.select after
      # each one, so that their heads are read as they come.
      def accept(listener)
        until @worker.stopping?
          client, remote = listener.accept
          return unless client

          first = receive(client, listener)
          if first.is_a?(HTTP::Request)
            serve_client(client, remote, listener, nil, first)
            @worker.now_and_then
          else
            read_head(client, remote, listener, first)
          end
          return unless @pending.empty?
        end
      end

      # Serves the connection if its head is complete or can be refused,
      # holds it otherwise.
      # @param first [String, nil] what {#receive} read of it
      def read_head(client, remote, listener, first)
        reader = HTTP::SocketReader.new(client, @read_timeout)
        reader.received(first) if first
        if reader.head_decided?(@max_request_line, @max_header_bytes)
          serve_client(client, remote, listener, reader)
          @worker.now_and_then
        else
          hold(PendingConnections::Pending.new(client, remote, listener, reader))
        end
      end

      # The connection's first read, and its head parsed into the env when
      # it is the common case, in C (HeadScanner.receive): a Request, or
      # the bytes read (a String), or nil for nothing read.
      def receive(client, listener)
        @env_templates &&
          HTTP::HeadScanner.receive(client, @env_templates[listener],
            @max_request_line, @max_header_bytes, @max_header_count)
      end

      def hold(pending)
        oldest = @pending.hold(pending) or return

        oldest.reader.expire_head!("#{@pending.limit} connections (max_pending_heads) " \
          "were waiting for their request head; the oldest made room")
        serve_pending(oldest, keep_alive: false) # not held again: it made room
      end

      # A held connection is readable. A kept one whose next request begins
      # gets the first read in C, as a new connection does.
      def continue_pending(pending)
        reader = pending.reader
        if reader.idle? && (first = receive(pending.client, pending.listener))
          return serve_pending(@pending.take(pending), request: first) if first.is_a?(HTTP::Request)

          reader.received(first)
        end
        serve_pending(@pending.take(pending)) if reader.head_decided?(@max_request_line, @max_header_bytes)
      end

      # After a response that left the connection open (the `keep_alive`
      # option): held like a connection whose head is on its way, silent
      # for `keep_alive` seconds at most.
      def keep(client, remote, listener)
        hold(PendingConnections::Pending.new(client, remote, listener,
          HTTP::SocketReader.new(client, @read_timeout, idle: @keep_alive)))
      end

      # Their head's time is up: the handler answers 408 (or serves a head
      # that came complete at the last moment).
      def serve_expired
        @pending.take_expired.each { |pending| serve_pending(pending) }
      end

      def serve_pending(pending, request: nil, keep_alive: true)
        serve_client(pending.client, pending.remote, pending.listener, request ? nil : pending.reader, request,
          keep_alive: keep_alive)
        @worker.now_and_then
      end

      def serve_client(client, remote, listener, reader, request = nil, keep_alive: true)
        exchange = @handler.call(client, remote_addr: remote, server_name: listener.host,
          server_port: listener.port_string, url_scheme: URL_SCHEME, on_request: @on_request,
          reader: reader, request: request,
          keep_alive: keep_alive && @keep_alive != false && !@worker.stopping?)
        # A kept connection that ended (closed by its client, or silent for
        # its idle time) without a request: no request to count, log or hook.
        return if reader&.idle?

        @access_log&.record(remote, exchange)
        @worker.served(exchange)
        keep(client, remote, listener) if exchange.kept_alive
      end
    end
  end
end
