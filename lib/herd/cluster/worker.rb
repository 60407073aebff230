# frozen_string_literal: true

require_relative "../clock"
require_relative "context"
require_relative "role_accessors"
require_relative "forking"
require_relative "out_of_band_gc"
require_relative "child_signals"
require_relative "connection_release"
require_relative "log_files"
require_relative "late_loads"
require_relative "jit_watch"
require_relative "../process_exit"
require_relative "../heap/room_keeper"
require_relative "../fork/safety"

module Herd
  module Cluster
    # A worker process: says hello and ready to the monitor, runs its
    # service's loop ({Server::Service#worker_loop}) until told to stop, and forks
    # the next mold when the monitor promotes it. The loop hands it the
    # control descriptors it sees ready ({#take_control}) and calls
    # {#now_and_then} between units of work, so that messages and signals
    # are acted on between them, never in the middle of one.
    # @api private
    class Worker
      include RoleAccessors

      # @return [Scoreboard, nil] the shared scoreboard, when this worker has a slot on it
      attr_reader :scoreboard
      # @return [WorkerInfo] its number, generation, pid and count of units of work
      attr_reader :info

      # @param slot [Integer, nil] its place on the scoreboard, given by the monitor
      # @param surge [Boolean] it replaces a worker that serves until this one is ready
      # @param link [Link] to the monitor
      # @param service [Server::Service] what the worker does
      # @param app [#call]
      # @param context [Context]
      def initialize(number:, generation:, slot:, link:, service:, app:, context:, surge: false)
        @info = WorkerInfo.new(number: number, generation: generation, pid: Process.pid, requests: 0)
        scoreboard = context.scoreboard
        @scoreboard = scoreboard if slot && scoreboard&.covers?(slot)
        @slot = slot
        @surge = surge
        @link = link
        @service = service
        @app = app
        @context = context
        @stopping = false
      end

      # Works until told to stop or orphaned; never returns.
      # @param inherited_signals [ChildSignals, nil] the mold's, closed once ours are set
      def run(inherited_signals = nil)
        title
        adopted_by_monitor
        @signals = ChildSignals.new(log, role, @context.monitor_pid, starting: true,
          graceful: job_worker?)
        inherited_signals&.close
        Forking.keep_own(@link.io, *@service.ios, config.log_io, @signals.io)
        # First, so that the monitor can kill us if what follows hangs.
        @link.send_message(Protocol::Hello.new(Process.pid, @info.number, @info.generation))
        ForkSafety.on_unsafe { |reason| @link.send_message(Protocol::ForkUnsafe.new(reason)) }
        hooks.run(:after_fork, log, role, @context, @info)
        @loop = @service.worker_loop(self, @app, @context)
        @request_hooks = hooks.any?(:after_request_complete)
        @gc = (OutOfBandGC.new(config.out_of_band_gc) if config.out_of_band_gc)
        @room = (Heap::RoomKeeper.start if config.heap_room?)
        @late_loads = LateLoads.new
        warm_up
        @jit = JITWatch.start
        @signals.serving!
        @link.send_message(Protocol::JIT.new(false)) if @jit
        @link.send_message(Protocol::Ready.new)
        @late_loads.excluding { hooks.run(:after_worker_ready, log, role, @context, @info) }
        @loop.run
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

      # @return [Boolean] whether the monitor or a signal asked this worker to stop
      def stopping?
        @stopping
      end

      # @return [Array<IO>] the descriptors the loop watches for the worker
      def control_ios
        [@link.io, @signals.io]
      end

      # Acts on `io` when it is one of {#control_ios}.
      # @return [Boolean] whether it was
      def take_control(io)
        if io == @link.io then read_link
        elsif io == @signals.io then handle_signals
        else return false
        end
        true
      end

      # Between units of work under load, every 100 ms at most, with one
      # clock read per unit: the monitor's messages and the signals (a stop
      # must be seen between units, but a recvmsg per request is a syscall
      # for nothing), and once a second the title (`ps` shows the count).
      def now_and_then
        now = Clock.now
        return if @looked_at && now - @looked_at < 0.1

        @looked_at = now
        read_link
        handle_signals
        title_now_and_then(now)
        keep_room(now) if @room
      end

      # The loop found nothing to do: let ps show the count of the last burst.
      def idle
        title
      end

      # A request started. Through the shared scoreboard when this worker has
      # a slot (no message, the monitor is not woken up), over the link otherwise.
      def busy(method, target)
        return @scoreboard.busy(@slot, method, target) if @scoreboard

        @link.send_message(Protocol::Busy.new("#{method} #{target}"))
      end

      # A request was answered: count it, report it, and run what follows a
      # request (the after_request_complete hooks, the out-of-band GC).
      # @param exchange [HTTP::Exchange]
      def served(exchange)
        @info.requests += 1
        report_idle
        hooks.run(:after_request_complete, log, role, @context, @info, exchange) if @request_hooks
        out_of_band_gc if @gc
        report_late_loads if @late_loads
        report_jit if @jit
      end

      # Where many units run at once (a job worker's threads), its loop
      # reports from the main thread: how many are done so far, and what
      # runs now. The monitor counts `done` as it counts requests
      # (refork_after, /stats), and shows `running` as a request line.
      # @param done [Integer]
      # @param running [Array(String, String), nil] like {#busy}'s arguments
      #   (e.g. "jobs", "HardJob, MailJob"); nil when nothing runs
      def progress(done, running)
        counted = done != @info.requests
        changed = running != @running
        return unless counted || changed

        @info.requests = done
        @running = running
        report_late_loads if counted && @late_loads
        return report_count(running) if @jobs_on_scoreboard

        running ? report_running(running, changed) : idle_after_work
      end

      # Where this worker has a scoreboard slot, its job threads write what
      # runs there as each job starts or ends (`tally`'s {Jobs::Tally#watch}),
      # so that the monitor knows what a worker killed mid-job was running;
      # {#progress} then only counts. Without a slot, the loop's report once
      # a tick is all there is.
      # @param tally [Jobs::Tally]
      # @param label [String] what the jobs are called ("jobs")
      def report_jobs_as_they_run(tally, label)
        return unless @scoreboard

        board = @scoreboard
        slot = @slot
        @jobs_on_scoreboard = true
        tally.watch { |running, done| running ? board.busy(slot, label, running) : board.idle(slot, done) }
      end

      private

      # A job worker outlives a dead monitor long enough to hand its jobs back.
      def adopted_by_monitor
        Forking.await_adoption(@context.monitor_pid, config.spawn_timeout,
          death_signal: job_worker? ? "TERM" : "KILL")
      end

      def job_worker?
        @service.job_worker?(@info.number, config)
      end

      # Code the warm-up loads is reported like a request's.
      def warm_up
        line = @loop.warm_up(surge: @surge)
        log.info(role, line) if line
      end

      # Signals are acted on between units of work, like the monitor's messages.
      def handle_signals
        @signals.take.each do |action|
          case action
          when :stop then @stopping = true
          when :reopen_logs then LogFiles.reopen_and_log(log, role)
          when :quiet then quiet
          end
        end
      end

      def quiet
        if @loop.respond_to?(:quiet)
          log.info(role, "SIGTSTP: quiet, taking no new work; QUIT or TERM stops it")
          return @loop.quiet
        end

        log.info(role, "SIGTSTP ignored: a #{@service} worker has no quiet state; QUIT stops it gracefully")
      end

      def out_of_band_gc
        @gc.between_requests
        return unless @gc.stood_down?

        log.info(role, "out-of-band GC stopped: #{OutOfBandGC::MISFIRES} or more of its GCs, " \
          "and a tenth of them or more, left Ruby's next GC a major one " \
          "(the heap's free slots are under RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO; " \
          "docs/CONFIGURATION.md, out_of_band_gc)")
        @gc = nil
      end

      def keep_room(now)
        said = @room.check(now)
        log.info(role, "heap: #{said}") if said
      end

      def report_jit
        settled = @jit.after_request(@info.requests)
        @link.send_message(Protocol::JIT.new(settled)) unless settled.nil?
      end

      def report_late_loads
        line = @late_loads.check or return

        log.info(role, line)
        @late_loads = nil
      end

      def report_idle
        return @scoreboard.idle(@slot, @info.requests) if @scoreboard

        @link.send_message(Protocol::Idle.new(@info.requests))
      end

      # As {#idle}: ps shows the count of the last burst.
      def idle_after_work
        title
        report_idle
      end

      # The count while still busy, and the label when it changed: on the
      # scoreboard, the label's clock starts over only with a new label; over
      # the link, as an idle then a busy message.
      def report_running(running, changed)
        unless @scoreboard
          report_idle
          return busy(*running)
        end

        @scoreboard.busy(@slot, *running) if changed
        @scoreboard.count(@slot, @info.requests)
      end

      # The job threads write the rest.
      def report_count(running)
        title unless running
        @scoreboard.count(@slot, @info.requests)
      end

      def title_now_and_then(now)
        return if @titled_at && now - @titled_at < 1

        @titled_at = now
        title
      end

      def read_link
        messages, closed = @link.read_ready
        messages.each do |message|
          case message
          when Protocol::Stop then @stopping = true
          when Protocol::ReopenLogs then LogFiles.reopen_and_log(log, role)
          when Protocol::Promote then promote(message.generation, @link.take_io)
          end
        end
        return unless closed

        return monitor_gone_gracefully if job_worker?

        log.info(role, "the monitor is gone; exiting")
        ProcessExit.now(0)
      end

      # A job worker finishes (or hands back) its jobs first.
      def monitor_gone_gracefully
        log.info(role, "the monitor is gone; stopping gracefully") unless @stopping
        @stopping = true
      end

      # Forks the next mold from this warmed process, as a sibling (double
      # fork), and goes back to work. The loop says what its work does
      # meanwhile: an HTTP worker forks between two requests, a job worker
      # finishes its jobs first (no thread may be inside a job at the fork),
      # so for it the new mold's clock starts over before that, with the
      # budget of a heap preparation (Deadlines#preparing).
      def promote(generation, mold_io)
        return unless mold_io
        # Refused on the new mold's own link: the monitor reads the refusal
        # before that link's end, which it would otherwise take for a mold
        # that died while starting.
        unless ForkSafety.fork_safe?
          refusal = Link.new(mold_io)
          refusal.send_message(Protocol::PromotionRefused.new(ForkSafety.reason))
          return refusal.close
        end

        Link.new(mold_io).send_message(Protocol::Preparing.new) if job_worker?
        mold = Mold.new(generation: generation, service: @service, context: @context)
        signals = @signals
        work = @loop
        work.forking do
          release_connections
          Forking.double_fork do
            @link.io.close
            work.leave
            mold.run_promoted(Link.new(mold_io), @app, signals)
          end
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
        @counted ||= job_worker? ? "jobs" : "requests"
        Process.setproctitle("herd worker #{@info.number} (gen #{@info.generation}) #{@counted}=#{@info.requests}")
      end
    end
  end
end
