# frozen_string_literal: true

require_relative "../clock"
require_relative "../linux"
require_relative "../low_priority"
require_relative "context"
require_relative "role_accessors"
require_relative "access_log"
require_relative "forking"
require_relative "out_of_band_gc"
require_relative "child_signals"
require_relative "connection_release"
require_relative "log_files"
require_relative "pending_connections"
require_relative "late_loads"
require_relative "../process_exit"
require_relative "../fork_safety"

module Herd
  module Server
    # A worker process: accepts connections and serves one request at a time.
    # Control messages from the monitor (soft signals) are read between
    # requests, so a request is never interrupted by them. A connection whose
    # request head is not all there yet is held ({PendingConnections}) and
    # watched with the listeners, so slow clients never stand between the
    # application and the clients that are ready.
    # @api private
    class Worker
      include RoleAccessors

      # Seconds a stopping worker still gives the heads of connections it holds.
      STOP_GRACE = 2
      # rack.url_scheme of a worker's connections (TLS ends in front of herd),
      # in the env template and the Handler's connection alike.
      URL_SCHEME = "http"

      # @param slot [Integer, nil] its place on the scoreboard, given by the monitor
      # @param surge [Boolean] it replaces a worker that serves until this one is ready
      # @param link [Link] to the monitor
      # @param listeners [Array<Listener>]
      # @param app [#call]
      # @param context [Context]
      def initialize(number:, generation:, slot:, link:, listeners:, app:, context:, surge: false)
        @info = WorkerInfo.new(number: number, generation: generation, pid: Process.pid, requests: 0)
        scoreboard = context.scoreboard
        @scoreboard = scoreboard if slot && scoreboard&.covers?(slot)
        @slot = slot
        @surge = surge
        @link = link
        @listeners = listeners
        @app = app
        @context = context
        @stopping = false
      end

      # Serves until told to stop or orphaned; never returns.
      # @param inherited_signals [ChildSignals, nil] the mold's, closed once ours are set
      def run(inherited_signals = nil)
        title
        adopted_by_monitor
        @signals = ChildSignals.new(log, role, @context.monitor_pid, starting: true)
        inherited_signals&.close
        Forking.keep_own(@link.io, *@listeners.map(&:socket), config.log_io, @signals.io)
        # First, so that the monitor can kill us if what follows hangs.
        @link.send_message([:hello, Process.pid, @info.number, @info.generation])
        ForkSafety.on_unsafe { |reason| @link.send_message([:fork_unsafe, reason]) }
        hooks.run(:after_fork, log, role, @context, @info)
        options = HTTP::Options.new(**config.http_options)
        @handler = HTTP::Handler.new(@app, options)
        use_c_extension
        @pending = PendingConnections.new(options.max_pending_heads)
        @read_timeout = options.read_timeout
        @keep_alive = options.keep_alive
        @max_request_line = options.max_request_line
        @max_header_bytes = options.max_header_bytes
        @max_header_count = options.max_header_count
        @on_request = method(:report_busy) # made once: a block would be a new Proc per request
        @request_hooks = hooks.any?(:after_request_complete)
        @access_log = AccessLog.open(config.access_log)
        @gc = (OutOfBandGC.new(config.out_of_band_gc) if config.out_of_band_gc)
        @late_loads = LateLoads.new
        warm_up
        @signals.serving!
        @link.send_message([:ready])
        @late_loads.excluding { hooks.run(:after_worker_ready, log, role, @context, @info) }
        serve
        hooks.run(:before_worker_exit, log, role, @context, @info)
        # Ruby's exit: the app's at_exit hooks run and its IO buffers are
        # flushed, as when a Unicorn, Puma or Pitchfork worker stops.
        ProcessExit.graceful(0)
      rescue SystemExit => e # ProcessExit.graceful above, or the app called exit: a graceful end
        ProcessExit.arm_fast_finish(e.status)
        raise
      rescue Exception => e # rubocop:disable Lint/RescueException -- log why, then leave; the monitor replaces us
        log.error(role, "crashed", e) unless e.is_a?(SignalException)
        ProcessExit.now(1)
      end

      private

      # herd's C extension, when built and not switched off
      # (HERD_HEAD_SCANNER=0): accept on TCP listeners, a connection's first
      # read and its head's parse into the env (HeadScanner.receive, from an
      # env template per listener), the scoreboard's writes (the HTTP layer
      # uses its own parts by itself).
      def use_c_extension
        c_extension = HTTP::HeadScanner.unused_reason.nil?
        @listeners.each { |listener| listener.accept_with(TCPAccept) } if c_extension && defined?(TCPAccept)
        @scoreboard&.write_with(ScoreboardSlots) if c_extension && defined?(ScoreboardSlots)
        return unless c_extension && HTTP::HeadScanner.respond_to?(:receive)

        @env_templates = @listeners.to_h do |listener|
          [listener, @handler.env_builder.template(listener.host, listener.port_string, URL_SCHEME)]
        end
      end

      def adopted_by_monitor
        Forking.await_adoption(@context.monitor_pid, config.spawn_timeout)
      end

      # The `warmup` requests, before any client's (see Warmup): the pages
      # they write are copied now, while the monitor still counts this
      # worker as starting. Code they load is reported like a request's.
      # A surge replacement is waited on by no one (the worker it replaces
      # serves meanwhile), so with `prepare_heap nice: N` it warms up at
      # nice N like a mold's preparation, and takes the CPU the serving
      # workers leave.
      def warm_up
        warmup = config.warmup
        return unless warmup&.workers

        line, outcome = LowPriority.run(warm_up_nice) { warmup.run(@app) }
        log.info(role, outcome ? "#{line} #{outcome}" : line)
      end

      def warm_up_nice
        config.heap_nice if @surge
      end

      # Signals are acted on between requests, like the monitor's messages.
      def handle_signals
        @signals.take.each do |action|
          (action == :stop) ? @stopping = true : LogFiles.reopen_and_log(log, role)
        end
      end

      def serve
        sockets = @listeners.to_h { |listener| [listener.socket, listener] }
        own = sockets.keys + [@link.io, @signals.io]
        until @stopping
          watched = @pending.empty? ? own : own + @pending.clients
          ready, = IO.select(watched, nil, nil, @pending.wait_at_most(1))
          serve_expired unless @pending.empty?
          next title unless ready # idle: let ps show the count of the last burst

          ready.each do |io|
            break if @stopping

            if io == @link.io then read_link
            elsif io == @signals.io then handle_signals
            elsif (listener = sockets[io]) then accept(listener)
            elsif (pending = @pending[io]) then continue_pending(pending)
            end
          end
        end
        finish_pending
      end

      # A stop is graceful for connections already accepted: closing one
      # whose request is on its way would reset its client (a HUP reload
      # under load did). Their heads get STOP_GRACE more seconds at most,
      # then 408; nothing new is accepted.
      def finish_pending
        @pending.close_idle # kept connections with no request under way
        @pending.hurry(STOP_GRACE, "the worker is stopping and the request head was not complete #{STOP_GRACE} s later")
        until @pending.empty?
          ready, = IO.select(@pending.clients, nil, nil, @pending.wait_at_most(STOP_GRACE))
          serve_expired
          ready&.each { |io| (pending = @pending[io]) && continue_pending(pending) }
        end
      end

      # Under load the next connection is usually waiting already, its head
      # with it: take it without another IO.select, until there is none or
      # we must stop. While connections are held, back to IO.select after
      # each one, so that their heads are read as they come.
      def accept(listener)
        until @stopping
          client, remote = listener.accept
          return unless client

          first = receive(client, listener)
          if first.is_a?(HTTP::Request)
            serve_client(client, remote, listener, nil, first)
            now_and_then
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
          now_and_then
        else
          hold(PendingConnections::Pending.new(client, remote, listener, reader))
        end
      end

      # The connection's first read, and its head parsed into the env when
      # it is the common case, in C (HeadScanner.receive): a Request, or
      # the bytes read (a String), or nil for nothing read.
      def receive(client, listener)
        @env_templates &&
          HTTP::HeadScanner.receive(client, @env_templates[listener], @max_request_line, @max_header_bytes, @max_header_count)
      end

      def hold(pending)
        oldest = @pending.hold(pending) or return

        oldest.reader.expire_head!("#{@pending.limit} connections (max_pending_heads) were waiting for their request head; the oldest made room")
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
        now_and_then
      end

      # Between requests under load, every 100 ms at most, with one clock
      # read per request: the monitor's messages and the signals (a stop
      # must be seen between requests, but a recvmsg per request is a
      # syscall for nothing), and once a second the title (`ps` shows the
      # request count).
      def now_and_then
        now = Clock.now
        return if @looked_at && now - @looked_at < 0.1

        @looked_at = now
        read_link
        handle_signals
        title_now_and_then(now)
      end

      def serve_client(client, remote, listener, reader, request = nil, keep_alive: true)
        exchange = @handler.call(client, remote_addr: remote, server_name: listener.host, server_port: listener.port_string,
          url_scheme: URL_SCHEME, on_request: @on_request, reader: reader, request: request,
          keep_alive: keep_alive && @keep_alive != false && !@stopping)
        # A kept connection that ended (closed by its client, or silent for
        # its idle time) without a request: no request to count, log or hook.
        return if reader&.idle?

        @info.requests += 1
        report_idle
        @access_log&.record(remote, exchange)
        hooks.run(:after_request_complete, log, role, @context, @info, exchange) if @request_hooks
        out_of_band_gc if @gc
        report_late_loads if @late_loads
        keep(client, remote, listener) if exchange.kept_alive
      end

      def out_of_band_gc
        @gc.between_requests
        return unless @gc.stood_down?

        log.info(role, "out-of-band GC stopped: #{OutOfBandGC::MISFIRES} or more of its GCs, and a tenth of them or more, " \
          "left Ruby's next GC a major one " \
          "(the heap's free slots are under RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO; docs/CONFIGURATION.md, out_of_band_gc)")
        @gc = nil
      end

      def report_late_loads
        line = @late_loads.check or return

        log.info(role, line)
        @late_loads = nil
      end

      # Through the shared scoreboard when this worker has a slot (no message,
      # the monitor is not woken up), over the link otherwise.
      def report_busy(method, target)
        return @scoreboard.busy(@slot, method, target) if @scoreboard

        @link.send_message([:busy, "#{method} #{target}"])
      end

      def report_idle
        return @scoreboard.idle(@slot, @info.requests) if @scoreboard

        @link.send_message([:idle, @info.requests])
      end

      def title_now_and_then(now)
        return if @titled_at && now - @titled_at < 1

        @titled_at = now
        title
      end

      def read_link
        messages, closed = @link.read_ready
        messages.each do |message|
          case message.first
          when :stop then @stopping = true
          when :reopen_logs then LogFiles.reopen_and_log(log, role)
          when :promote then promote(message[1], @link.take_io)
          end
        end
        return unless closed

        log.info(role, "the monitor is gone; exiting")
        ProcessExit.now(0)
      end

      # Forks the next mold from this warmed process, as a sibling (double
      # fork), and goes back to serving: capacity never drops.
      def promote(generation, mold_io)
        return unless mold_io
        # Refused on the new mold's own link: the monitor reads the refusal
        # before that link's end, which it would otherwise take for a mold
        # that died while starting.
        unless ForkSafety.fork_safe?
          refusal = Link.new(mold_io)
          refusal.send_message([:promotion_refused, ForkSafety.reason])
          return refusal.close
        end

        release_connections
        mold = Mold.new(generation: generation, listeners: @listeners, context: @context)
        access_log = @access_log
        signals = @signals
        pending = @pending
        Forking.double_fork do
          @link.io.close
          access_log&.close # the new mold's workers open their own
          pending.close_all # or their clients would never see this worker's close
          mold.run_promoted(Link.new(mold_io), @app, signals)
        end
        mold_io.close
      end

      # What this worker opened while serving must not live on in the next
      # mold and every worker it forks.
      def release_connections
        hooks.run(:before_promotion, log, role, @context, @info)
        released = ConnectionRelease.release
        log.info(role, "before promotion: #{released}") if released
      rescue => e
        log.error(role, "releasing connections before promotion failed; promoting anyway", e)
      end

      def title
        Process.setproctitle("herd worker #{@info.number} (gen #{@info.generation}) requests=#{@info.requests}")
      end
    end
  end
end
