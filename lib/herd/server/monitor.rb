# frozen_string_literal: true

require_relative "../linux"
require_relative "../malloc"
require_relative "children"
require_relative "context"
require_relative "forking"
require_relative "lean_monitor"
require_relative "link"
require_relative "listener"
require_relative "log"
require_relative "mold"
require_relative "scoreboard"
require_relative "signal_queue"
require_relative "systemd"

module Herd
  module Server
    # The process `herd serve` starts. It never loads the application: it
    # binds the listeners, becomes a child subreaper, spawns the mold, asks it
    # for workers, watches them (timeouts, deaths), reaps every child, known
    # or not, and turns signals into decisions. One thread, one IO.select.
    class Monitor
      SIGNALS = %w[QUIT TERM INT TTIN TTOU CHLD USR2 HUP].freeze
      TICK = 0.2
      IMMEDIATE_GRACE = 2
      MAX_BOOT_FAILURES = 3
      SCOREBOARD_SLOTS = 256
      ROLE = "monitor"

      # @param config [Config]
      def initialize(config, log: Log.new(config.log_io))
        @config = config
        @log = log
        @children = Children.new
        @generation = 0
        @newest_generation = 0
        @refork = nil
        @next_refork_at = 0.0
        @refork_failures = Hash.new(0)
        @boot_failures = 0
        @worker_failures = 0
        @next_mold_at = 0.0
        @next_worker_at = 0.0
        @state = :running
        @exit_status = 0
      end

      # Serves until stopped.
      # @return [Integer] the exit status
      def run
        @config.validate!
        # HERD_SCOREBOARD_SLOTS exists for the tests of workers without a slot.
        slots = Integer(ENV.fetch("HERD_SCOREBOARD_SLOTS") { [SCOREBOARD_SLOTS, @config.workers * 4].max })
        @scoreboard = Scoreboard.allocate(slots)
        @context = Context.new(config: @config, log: @log, monitor_pid: Process.pid, scoreboard: @scoreboard)
        Process.setproctitle("herd monitor")
        @listeners = open_listeners
        describe_lean_monitor
        @target = @config.workers
        choose_process_model
        @signals = SignalQueue.new(SIGNALS)
        release_boot_memory
        supervise
        @exit_status
      ensure
        shut_down_hard
      end

      private

      def open_listeners
        fds = Systemd.listen_fds
        listeners = fds.empty? ? @config.listeners.map { |spec| Listener.bind(spec) } : fds.map { |fd| Listener.inherit(fd) }
        how = fds.empty? ? "listening on" : "listening (systemd socket) on"
        listeners.each { |listener| @log.info(ROLE, "#{how} #{listener}") }
        listeners
      end

      def describe_lean_monitor
        case LeanMonitor.state
        when :lean
          @log.info(ROLE, "lean: re-executed without RubyGems and Bundler, the mold loads them " \
            "(#{LeanMonitor::FLAG} or #{LeanMonitor::SWITCH_ENV}=0 keeps them here)")
        when :restored
          @log.info(ROLE, "the config file needs a gem: RubyGems and Bundler loaded in the monitor too")
        end
        gc = LeanMonitor.ruby_gc
        return if gc.empty?

        @log.info(ROLE, "Ruby's GC: #{RubyGCDefaults.describe(gc)} for every process of the server " \
          "(herd's default; set it in the environment to choose another value)")
      end

      # A subreaper lets the mold's double-forked workers become our children;
      # without one (not Linux), we load the app here and fork workers ourselves.
      def choose_process_model
        if @config.subreaper && Linux.child_subreaper!
          @log.info(ROLE, "child subreaper; workers will be forked by the mold")
        else
          @log.info(ROLE, "no child subreaper (not Linux, or disabled): plain preload, " \
            "the monitor loads the app and forks workers itself; reforking is not available")
          @local_mold = Mold.new(generation: @generation, listeners: @listeners, context: @context)
          @local_mold.boot
        end
      end

      # The monitor lives as long as the server and its boot garbage (the CLI,
      # the config) would stay resident: collect it and give malloc's free
      # pages back.
      def release_boot_memory
        GC.start
        Malloc.trim
      end

      def supervise
        loop do
          @signals.drain.each { |signal| on_signal(signal) }
          reap
          break if @state == :stopping && @children.none?

          maintain if @state == :running
          enforce_deadlines
          wait
        end
        @log.info(ROLE, "stopped")
      end

      # --- keeping the right processes alive -----------------------------

      def maintain
        return replace_mold if @local_mold.nil? && @children.molds.empty? && now >= @next_mold_at

        retire_extra_workers
        roll_out
        spawn_missing_workers
        announce_ready
        consider_refork
      end

      # No mold: promote a warmed worker if there is one (the app stays warm),
      # otherwise boot a fresh one from config.ru.
      def replace_mold
        return if @refork
        return if !promotion_candidates.empty? && start_refork("the mold is gone")

        spawn_mold
      end

      def spawn_mold
        mine, theirs = Link.pair
        generation = @children.any? ? (@newest_generation += 1) : @newest_generation
        @generation = generation
        mold = Mold.new(generation: generation, listeners: @listeners, context: @context)
        pid = Forking.fork_quietly do
          leave_monitor([mine.io])
          mold.run(theirs)
        end
        theirs.close
        @children.add(Child.new(role: :mold, generation: generation, pid: pid, link: mine, state: :spawning,
          spawned_at: now))
        @log.info(ROLE, "mold (gen #{generation}) spawned as pid #{pid}")
      end

      def spawn_missing_workers
        return if now < @next_worker_at

        mold = @children.molds.find { |child| child.ready? && child.generation == @generation }
        return unless mold || @local_mold

        missing = (0...@target).to_a - @children.workers.map(&:number)
        missing.each { |number| spawn_worker(number, mold) }
      end

      def spawn_worker(number, mold)
        @scoreboard.reset(number) if @scoreboard&.covers?(number)
        mine, theirs = Link.pair
        child = Child.new(role: :worker, number: number, generation: @generation, link: mine, state: :spawning,
          spawned_at: now, requests: 0)
        if mold
          sent = mold.link.send_message([:spawn_worker, number, @generation], io: theirs.io)
          theirs.close
          return mine.close unless sent
        else
          child.pid = @local_mold.spawn_worker(number, @generation, theirs.io, double_fork: false,
            in_child: -> { leave_monitor([mine.io]) })
        end
        @children.add(child)
      end

      # First thing in a child forked by the monitor: none of the monitor's
      # signal handlers, and none of its links to other children (a sibling
      # holding one would hide that child's death from us).
      def leave_monitor(extra_ios)
        @signals.reset_in_child
        (@children.ios + extra_ios).each { |io| io.close unless io.closed? }
      end

      # --- reforking ---------------------------------------------------------

      def consider_refork
        return if @refork || now < @next_refork_at || !@config.refork_after || @local_mold

        schedule = @config.refork_after
        threshold = schedule[[@generation, schedule.size - 1].min]
        busiest = current_workers.max_by { |child| requests_of(child) }
        start_refork("#{requests_of(busiest)} requests") if busiest && requests_of(busiest) >= threshold
      end

      # @return [Boolean] whether a promotion was asked for
      def start_refork(reason)
        return false if @refork || @local_mold || @state != :running

        candidate = promotion_candidates.first
        unless candidate
          @log.info(ROLE, "refork (#{reason}): no fork-safe worker to promote; generation #{@generation} keeps serving")
          @next_refork_at = now + 5
          return false
        end
        promote(candidate, reason)
      end

      def promote(candidate, reason)
        mine, theirs = Link.pair
        generation = @newest_generation += 1
        sent = candidate.link.send_message([:promote, generation], io: theirs.io)
        theirs.close
        return mine.close && false unless sent

        @refork = @children.add(Child.new(role: :mold, generation: generation, link: mine, state: :spawning,
          spawned_at: now, requests: 0))
        @refork_candidate = candidate
        @log.info(ROLE, "refork (#{reason}): promoting #{candidate} with #{requests_of(candidate)} requests " \
          "to mold (gen #{generation})")
        true
      end

      # The warmest first: most requests served, fewest failed promotions.
      def promotion_candidates
        @children.workers.select { |child| child.ready? && !child.fork_unsafe }
          .sort_by { |child| [@refork_failures[child.pid], -requests_of(child)] }
      end

      def current_workers
        @children.workers.select { |child| child.ready? && child.generation == @generation }
      end

      def requests_of(child)
        return child.requests.to_i unless @scoreboard&.covers?(child.number)

        @scoreboard.requests(child.number)
      end

      # The new mold is ready: it is the current generation now; the old mold
      # goes, and old workers are replaced a few at a time (roll_out).
      def refork_done(mold)
        @refork = nil
        @generation = mold.generation
        @next_refork_at = 0.0
        @log.info(ROLE, "mold (gen #{mold.generation}) ready; replacing older workers " \
          "#{@config.refork_max_unavailable} at a time")
        @children.molds.each do |child|
          next if child.equal?(mold) || child.state == :stopping

          child.state = :stopping
          child.link.send_message([:stop])
        end
      end

      def refork_failed(mold, why)
        @refork = nil
        @refork_failures[@refork_candidate&.pid] += 1
        delay = [1.0 * (2**[@refork_failures.values.sum, 5].min), 30].min
        @next_refork_at = now + delay
        @log.info(ROLE, "refork to generation #{mold.generation} failed (#{why}); generation #{@generation} " \
          "keeps serving; next attempt in #{delay.round(1)}s")
      end

      # Old-generation workers are stopped (gracefully) at most
      # refork_max_unavailable at a time; spawn_missing_workers replaces them
      # from the current mold.
      def roll_out
        old = @children.workers.select { |child| child.generation < @generation }
        return if old.empty? || @children.molds.none? { |child| child.ready? && child.generation == @generation }

        unavailable = @children.workers.count { |child| child.state != :ready } + ((0...@target).to_a - @children.workers.map(&:number)).size
        old.select(&:ready?).first([@config.refork_max_unavailable - unavailable, 0].max).each do |child|
          child.state = :stopping
          child.link.send_message([:stop])
        end
      end

      def retire_extra_workers
        @children.workers.each do |child|
          next if child.number < @target || child.state == :stopping

          child.state = :stopping
          child.link.send_message([:stop])
          @log.info(ROLE, "#{child} asked to stop (workers: #{@target})")
        end
      end

      def announce_ready
        return if @announced || @target.zero? || @children.workers.count(&:ready?) < @target

        @announced = true
        @log.info(ROLE, "ready: #{@target} workers serving #{@listeners.join(", ")}")
        Systemd.notify("READY=1\nSTATUS=#{@target} workers")
      end

      # --- what the children say ------------------------------------------

      def wait
        ready, = IO.select([@signals.io] + @children.ios, nil, nil, TICK)
        return unless ready

        ready.each do |io|
          next if io == @signals.io

          child = @children.by_io(io)
          next unless child

          messages, closed = child.link.read_ready
          messages.each { |message| on_message(child, message) }
          # unless a message settled it already (a refused promotion)
          on_link_closed(child) if closed && @children.include?(child)
        end
      end

      def on_message(child, message)
        case message.first
        when :hello then child.pid ||= message[1]
        when :ready then on_ready(child)
        when :busy
          child.busy_since = now
          child.busy_with = message[1]
        when :idle
          child.busy_since = nil
          child.requests = message[1]
        when :boot_failed then @last_boot_error = message[1]
        when :fork_unsafe
          child.fork_unsafe = true
          @log.info(ROLE, "#{child} is no longer fork safe (#{message[1]}); it will not be promoted")
        when :promotion_refused then promotion_refused(child, message[1])
        end
      end

      # The worker asked to fork `mold` was no longer fork safe: it says so
      # on the mold's link. Not a failed refork (no back-off); the next
      # warmest worker is asked at once.
      def promotion_refused(mold, reason)
        return unless mold.equal?(@refork)

        candidate = @refork_candidate
        candidate.fork_unsafe = true
        @children.delete(mold)
        @refork = nil
        running = @state == :running
        @log.info(ROLE, "#{candidate} refused promotion (not fork safe: #{reason})#{"; trying another worker" if running}")
        start_refork("retry") if running
      end

      def on_ready(child)
        return if child.state == :stopping

        child.state = :ready
        @log.info(ROLE, "#{child} ready")
        refork_done(child) if child.equal?(@refork)
        if child.mold?
          @boot_failures = 0
        else
          @worker_failures = 0
          @mold_deaths = 0
        end
      end

      # The child closed its link: it exited (reaped soon) or never told us
      # its pid (it died while starting).
      def on_link_closed(child)
        child.link.close
        return if child.pid

        @children.delete(child)
        @log.info(ROLE, "#{child} died while starting")
        return unless @state == :running

        child.equal?(@refork) ? refork_failed(child, "it died while starting") : worker_failed
      end

      # --- deaths ------------------------------------------------------------

      def reap
        loop do
          pid, status = Process.waitpid2(-1, Process::WNOHANG)
          break unless pid

          child = @children.by_pid(pid)
          child ? on_exit(child, status) : @log.info(ROLE, "reaped pid #{pid} (#{describe(status)}), not one of ours")
        end
      rescue Errno::ECHILD
        nil
      end

      def on_exit(child, status)
        @children.delete(child)
        @log.info(ROLE, "#{child} #{describe(status)}")
        if child.worker?
          info = WorkerInfo.new(number: child.number, generation: child.generation, pid: child.pid, requests: child.requests)
          @config.hooks.run(:after_worker_exit, @log, ROLE, @context, info, status)
          worker_failed if child.state == :spawning && @state == :running
        elsif child.equal?(@refork)
          refork_failed(child, describe(status)) if @state == :running
        elsif @state == :running && child.state != :stopping
          (child.state == :spawning) ? mold_failed : mold_died
        end
      end

      # A mold that dies after booting is replaced, with a growing pause if
      # it keeps dying; the workers go on serving meanwhile.
      def mold_died
        @mold_deaths = (@mold_deaths || 0) + 1
        delay = [0.1 * (2**@mold_deaths), 10].min
        @next_mold_at = now + delay
        @log.info(ROLE, "replacing the mold in #{delay.round(1)}s; workers keep serving")
      end

      def mold_failed
        @boot_failures += 1
        if @boot_failures >= MAX_BOOT_FAILURES
          @log.error(ROLE, "the application failed to boot #{@boot_failures} times in a row " \
            "(last error: #{@last_boot_error || "see above"}); giving up")
          @exit_status = 1
          return stop(:immediate)
        end
        delay = [0.5 * (2**@boot_failures), 10].min
        @next_mold_at = now + delay
        @log.info(ROLE, "mold failed to boot; retrying in #{delay}s")
      end

      # A crash loop must not become a fork bomb: back off, up to 10 s.
      def worker_failed
        @worker_failures += 1
        delay = [0.1 * (2**@worker_failures), 10].min
        @next_worker_at = now + delay
      end

      def describe(status)
        return "exited with status #{status.exitstatus}" if status.exited?

        "was killed by SIG#{Signal.signame(status.termsig)}"
      end

      # --- timeouts ----------------------------------------------------------

      def enforce_deadlines
        return kill_all("shutdown timeout reached") if @stop_deadline && now > @stop_deadline

        @children.each do |child|
          if (label = overdue_request(child))
            @log.info(ROLE, "#{child} timed out after #{@config.timeout}s on #{label}; killing it")
            child.busy_since = nil
            child.state = :stopping
            kill(child)
          elsif child.state == :spawning && now - child.spawned_at > @config.spawn_timeout
            @log.info(ROLE, "#{child} was not ready within spawn_timeout (#{@config.spawn_timeout}s); killing it")
            child.state = :stopping
            child.pid ? kill(child) : on_link_closed(child)
          end
        end
      end

      # @return [String, nil] the request line of a request past the timeout
      def overdue_request(child)
        return nil unless child.worker? && child.state == :ready

        if @scoreboard&.covers?(child.number)
          elapsed, label = @scoreboard.current(child.number)
          label if elapsed && elapsed > @config.timeout
        elsif child.busy_since && now - child.busy_since > @config.timeout
          child.busy_with
        end
      end

      def kill(child, signal = :KILL)
        Process.kill(signal, child.pid) if child.pid
      rescue Errno::ESRCH
        nil
      end

      def kill_all(reason)
        @log.info(ROLE, "#{reason}: killing #{@children.count} process(es)") if @children.any?
        @children.each { |child| kill(child) }
        @stop_deadline = nil
      end

      # --- signals -----------------------------------------------------------

      def on_signal(signal)
        case signal
        when "QUIT", "TERM" then stop(:graceful, signal)
        when "INT" then stop(:immediate, signal)
        when "TTIN" then resize(@target + 1)
        when "TTOU" then resize([@target - 1, 0].max)
        when "USR2" then start_refork("USR2")
        when "HUP" then @log.info(ROLE, "HUP ignored (restart the service to load new code)")
        end
      end

      def resize(target)
        return if @state != :running || target == @target

        @log.info(ROLE, "workers: #{@target} -> #{target}")
        @target = target
      end

      def stop(how, signal = nil)
        return if @state == :stopping && how == :graceful

        @state = :stopping
        Systemd.notify("STOPPING=1")
        if how == :graceful
          @log.info(ROLE, "#{signal}: graceful stop, waiting up to #{@config.shutdown_timeout}s for requests in flight")
          @children.each { |child| child.link.send_message([:stop]) unless child.link.closed? }
          @stop_deadline = now + @config.shutdown_timeout
        else
          @log.info(ROLE, "#{signal || "giving up"}: immediate stop")
          @children.each { |child| kill(child, :TERM) }
          @stop_deadline = now + IMMEDIATE_GRACE
        end
      end

      # Whatever happened, no child outlives the monitor.
      def shut_down_hard
        @children.each { |child| kill(child) }
        @children.each do |child|
          Process.wait(child.pid) if child.pid
        rescue Errno::ECHILD
          nil
        end
        @listeners&.each(&:close)
      end

      def now
        Process.clock_gettime(Process::CLOCK_MONOTONIC)
      end
    end
  end
end
