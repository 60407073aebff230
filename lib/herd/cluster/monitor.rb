# frozen_string_literal: true

require_relative "../clock"
require_relative "../linux"
require_relative "../heap/malloc"
require_relative "children"
require_relative "context"
require_relative "deadlines"
require_relative "ksm"
require_relative "lean_monitor"
require_relative "link"
require_relative "log"
require_relative "log_files"
require_relative "monitor/instruments"
require_relative "monitor/plan"
require_relative "monitor/reaper"
require_relative "monitor/signals"
require_relative "pidfile"
require_relative "recovery"
require_relative "rollout"
require_relative "scoreboard"
require_relative "signal_queue"
require_relative "spawner"
require_relative "systemd"
require_relative "telemetry"
require_relative "workload"

module Herd
  module Cluster
    # The process a cluster starts with (`herd serve`). It never loads the
    # application: it opens its service's sockets (the listeners), becomes a
    # child subreaper, spawns the mold, asks it for workers, watches them,
    # reaps every child, known or not, and turns signals into decisions. One
    # thread, one IO.select. The parts:
    #
    # - Plan: how many workers, running or stopping, the exit status
    # - Spawner: forks molds, asks molds for workers and workers for molds
    # - Rollout: refork and reload, from one generation to the next
    # - Recovery: pauses after failures; Deadlines: timeouts and SIGKILL
    # - Signals: what each signal means; Reaper: deaths
    # - Protocol: every message between the monitor and its children
    # - Instruments: the memory sampler, the control endpoint and the
    #   memory policy (refork_when, worker_memory_limit)
    # @api private
    class Monitor
      SCOREBOARD_SLOTS = 256
      TICK = 0.2
      ROLE = "monitor"

      # @return [Telemetry] what happened so far (for /stats, the logs and tests)
      attr_reader :telemetry

      # @param config [Server::Config]
      # @param service [Server::Service] what the workers do
      def initialize(config, service:, log: Log.new(config.log_io))
        @config = config
        @service = service
        @log = log
        @children = Children.new
        @recovery = Recovery.new
        @plan = Plan.new(config.process_count)
        @telemetry = Telemetry.new
      end

      # Serves until stopped.
      # @return [Integer] the exit status
      def run
        @config.validate!
        # Before the redirect: a refusal must reach the terminal.
        @pidfile = Pidfile.write(@config.pidfile) if @config.pidfile
        LogFiles.redirect(stdout_path: @config.stdout_path, stderr_path: @config.stderr_path)
        # Every process of the server writes its lines at once (as under
        # Puma): a buffered line waits for the next flush, and dies with a
        # process killed by SIGKILL or the OOM killer.
        $stdout.sync = true
        @log.info(ROLE, "settings: #{@config.describe_origins}")
        build_parts
        @instruments.start
        Process.setproctitle(["herd monitor", @instruments.title].compact.join(" "))
        LeanMonitor.describe(@log, ROLE)
        @ksm.apply(@config.ksm)
        choose_process_model
        release_boot_memory
        supervise
        @plan.exit_status
      rescue Herd::Error
        raise # a setting refused at boot: the CLI says it in one line
      rescue Exception => e # rubocop:disable Lint/RescueException -- a monitor never dies without a log line
        @log.error(ROLE, "crashed (#{e.class}); stopping every process of the server", e)
        raise
      ensure
        shut_down_hard
        @pidfile&.remove
      end

      private

      def build_parts
        slots = scoreboard_slots
        @scoreboard = Scoreboard.allocate(slots)
        @context = Context.new(config: @config, log: @log, monitor_pid: Process.pid, scoreboard: @scoreboard,
          telemetry: @telemetry)
        @service.open(@config, @log, ROLE)
        @signal_queue = SignalQueue.new(Signals::NAMES)
        @ksm = KSM.new(@log, ROLE)
        @workload = Workload.new(@scoreboard)
        @spawner = Spawner.new(children: @children, context: @context, service: @service, signals: @signal_queue,
          workload: @workload, monitor_ios: -> { @instruments.ios })
        @rollout = Rollout.new(children: @children, context: @context, spawner: @spawner, workload: @workload)
        @deadlines = Deadlines.new(children: @children, context: @context, workload: @workload, service: @service)
        @signals = Signals.new(context: @context, plan: @plan, children: @children, rollout: @rollout,
          spawner: @spawner, deadlines: @deadlines, service: @service, ksm: @ksm)
        @reaper = Reaper.new(context: @context, plan: @plan, children: @children, telemetry: @telemetry,
          workload: @workload, recovery: @recovery, rollout: @rollout, on_give_up: -> { @signals.stop(:immediate) })
        @instruments = Instruments.new(context: @context, plan: @plan, children: @children, workload: @workload,
          telemetry: @telemetry, rollout: @rollout, recovery: @recovery)
      end

      # HERD_SCOREBOARD_SLOTS exists for the tests of workers without a slot.
      def scoreboard_slots
        value = ENV["HERD_SCOREBOARD_SLOTS"]
        return [SCOREBOARD_SLOTS, @config.process_count * 4].max if value.nil?

        Integer(value, 10).tap { |slots| raise ArgumentError if slots.negative? }
      rescue ArgumentError
        raise ConfigError, "HERD_SCOREBOARD_SLOTS=#{value.inspect}: " \
          "must be a whole number of slots (0: every worker reports over its link)"
      end

      # The config a reload may have replaced.
      def config
        @context.config
      end

      # A subreaper lets the mold's double-forked workers become our children;
      # without one (not Linux), we load the app here and fork workers ourselves.
      def choose_process_model
        if config.subreaper && Linux.child_subreaper!
          @log.info(ROLE, "child subreaper; workers will be forked by the mold")
        else
          @log.info(ROLE, "no child subreaper (not Linux, or disabled): plain preload, " \
            "the monitor loads the app and forks workers itself; reforking is not available")
          @spawner.boot_local_mold(@rollout.generation)
        end
      end

      # The monitor lives as long as the server and its boot garbage (the CLI,
      # the config) would stay resident: collect it and give malloc's free
      # pages back.
      def release_boot_memory
        GC.start
        Heap::Malloc.trim
      end

      def supervise
        loop do
          @signal_queue.drain.each { |signal| @signals.on_signal(signal) }
          @reaper.reap
          break if @plan.stopping? && @children.none?

          maintain if @plan.running?
          @deadlines.enforce { |child| on_link_closed(child) }
          wait
        end
        @log.info(ROLE, "stopped")
      end

      # --- keeping the right processes alive -----------------------------

      def maintain
        return replace_mold if !@spawner.local_mold && @children.molds.empty? && @recovery.mold_due?

        retire_extra_workers
        @rollout.roll_out(@plan.target, spawn: @recovery.workers_due?)
        spawn_missing_workers
        announce_ready
        @rollout.consider_refork
        @instruments.apply_memory_policy
      end

      # No mold: promote a warmed worker if there is one (the app stays warm),
      # otherwise boot a fresh one from config.ru.
      def replace_mold
        return if @rollout.pending?
        return if !@rollout.promotion_candidates.empty? && @rollout.refork("the mold is gone")

        @spawner.spawn_mold(@rollout.fresh_generation)
      end

      def spawn_missing_workers
        return unless @recovery.workers_due?

        generation = @rollout.generation
        mold = @children.molds.find { |child| child.ready? && child.generation == generation }
        return unless mold || @spawner.local_mold

        missing = (0...@plan.target).to_a - @children.workers.map(&:number)
        missing.each { |number| @spawner.spawn_worker(number, generation, mold) }
      end

      def retire_extra_workers
        @children.workers.each do |child|
          next if child.number < @plan.target || child.state == :stopping

          @children.stop(child)
          @log.info(ROLE, "#{child} asked to stop (workers: #{@plan.target})")
        end
      end

      def announce_ready
        target = @plan.target
        return if @announced || target.zero? || @children.workers.count(&:ready?) < target

        @announced = true
        @log.info(ROLE, "ready: #{target} workers #{@service}")
        Systemd.notify("READY=1\nSTATUS=#{target} workers")
      end

      # --- what the children say ------------------------------------------

      def wait
        readable, writable = IO.select([@signal_queue.io] + @children.ios + @instruments.read_ios,
          @instruments.write_ios, nil, TICK)
        @instruments.serve(readable, writable)
        return unless readable

        readable.each do |io|
          next if io == @signal_queue.io || @instruments.owns?(io)

          child = @children.by_io(io)
          next unless child

          messages, closed = child.link.read_ready
          messages.each { |message| on_message(child, message) }
          # unless a message settled it already (a refused promotion)
          on_link_closed(child) if closed && @children.include?(child)
        end
      end

      # See Protocol::FROM_CHILD.
      def on_message(child, message)
        case message
        when Protocol::Hello
          child.pid ||= message.pid
          # Asked to stop before it said hello (see Children#stop).
          @children.signal(child, :QUIT) if child.worker? && child.state == :stopping
        when Protocol::Ready then on_ready(child)
        when Protocol::Preparing then @deadlines.preparing(child)
        when Protocol::JIT then child.jit_settled = message.settled
        when Protocol::Busy
          child.busy_since = Clock.now
          child.busy_with = message.label
        when Protocol::Idle
          child.busy_since = nil
          child.requests = message.requests
        when Protocol::BootFailed then @rollout.last_boot_error = @reaper.last_boot_error = message.error
        when Protocol::ForkUnsafe
          child.fork_unsafe = true
          @log.info(ROLE, "#{child} is no longer fork safe (#{message.reason}); it will not be promoted")
        when Protocol::PromotionRefused then @rollout.refused(child, message.reason, running: @plan.running?)
        end
      end

      def on_ready(child)
        return if child.state == :stopping

        child.state = :ready
        @log.info(ROLE, "#{child} ready")
        @rollout.mold_ready(child)
        @rollout.worker_ready(child)
        @recovery.ready(child)
      end

      # The child closed its link: it exited (reaped soon) or never told us
      # its pid (it died while starting).
      def on_link_closed(child)
        child.link.close
        return if child.pid

        @children.delete(child)
        @log.info(ROLE, "#{child} died while starting")
        return unless @plan.running?

        @rollout.pending_mold?(child) ? @rollout.failed(child, "it died while starting") : @reaper.spawn_failed
      end

      # Whatever happened, no child outlives the monitor.
      def shut_down_hard
        @instruments&.stop
        return unless @children

        @children.each { |child| @children.signal(child, :KILL) }
        @children.each do |child|
          Process.wait(child.pid) if child.pid
        rescue Errno::ECHILD
          nil
        end
        @service.close
      end
    end
  end
end
