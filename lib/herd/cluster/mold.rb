# frozen_string_literal: true

require_relative "../heap"
require_relative "../clock"
require_relative "forking"
require_relative "../linux"
require_relative "context"
require_relative "early_yjit"
require_relative "role_accessors"
require_relative "link"
require_relative "worker"
require_relative "child_signals"
require_relative "log_files"
require_relative "../process_exit"

module Herd
  module Cluster
    # Loads the application (its service says how), prepares the heap, and
    # forks workers when the monitor asks. In a separate process under a subreaper (Linux), it forks
    # each worker by double fork so the worker becomes the monitor's child;
    # without one, the monitor plays this role itself and forks directly.
    # @api private
    class Mold
      include RoleAccessors

      attr_reader :info

      # @param service [Server::Service] what the workers do
      def initialize(generation:, service:, context:)
        @info = MoldInfo.new(generation: generation, pid: Process.pid)
        @service = service
        @context = context
      end

      # The mold process's life: boot, then serve spawn requests until the
      # monitor says stop or goes away. Never returns.
      # @param link [Link] to the monitor
      def run(link)
        @separate = true
        serve_as_mold(link) do
          Linux.parent_death_signal("KILL")
          Forking.orphaned! if Process.ppid != @context.monitor_pid
        end
      end

      # The life of a mold forked from a warmed worker (reforking): the app
      # is loaded and warm already. Never returns.
      # @param inherited_signals [ChildSignals] the worker's, closed once ours are set
      def run_promoted(link, app, inherited_signals)
        @app = app
        @promoted = true
        serve_as_mold(link, inherited_signals) { Forking.await_adoption(@context.monitor_pid, config.spawn_timeout) }
      end

      # Loads the app and prepares the heap (also used in-process by a
      # monitor without subreaper).
      def boot
        unless @app
          early_yjit = EarlyYJIT.on?
          @app = @service.load_app(config, log, role)
          warn_about_shadowed_gems
          log.info(role, EarlyYJIT::ADVICE) if early_yjit
        end
        hooks.run(:after_mold_fork, log, role, @context, @info)
        # Not in a promoted mold: the worker it comes from has served real traffic.
        @service.warm_up_mold(@app, config, log, role) unless @promoted
        warn_about_threads
        prepare_heap
      end

      # Forks worker `number`. With double_fork the worker is reparented to
      # the monitor (the subreaper) and its pid is unknown here.
      # @param worker_io [Socket] the worker's end of its link to the monitor
      # @param slot [Integer, nil] its place on the scoreboard (nil: none, it reports over its link)
      # @param surge [Boolean] it replaces a worker that serves until it is ready
      # @param in_child [#call] run first in the worker: close what it must not keep
      # @return [Integer, nil] the worker's pid (single fork) or nil
      def spawn_worker(number, generation, worker_io, slot:, double_fork:, in_child:, surge: false)
        hooks.run(:before_fork, log, role, @context,
          WorkerInfo.new(number: number, generation: generation, requests: 0))
        signals = @signals
        start = proc do
          in_child.call
          Worker.new(number: number, generation: generation, slot: slot, surge: surge, link: Link.new(worker_io),
            service: @service, app: @app, context: @context).run(signals)
        end
        pid = double_fork ? Forking.double_fork(&start) : Forking.fork_quietly(&start)
        worker_io.close
        pid
      end

      private

      def serve_as_mold(link, inherited_signals = nil)
        @link = link
        @info.pid = Process.pid
        Process.setproctitle("herd mold (gen #{@info.generation})")
        yield
        @signals = ChildSignals.new(log, role, @context.monitor_pid)
        inherited_signals&.close
        Forking.keep_own(@link.io, *@service.ios, config.log_io, @signals.io)
        @link.send_message(Protocol::Hello.new(Process.pid, nil, @info.generation))
        boot
        @link.send_message(Protocol::Ready.new)
        serve_requests
        ProcessExit.graceful(0)
      rescue SystemExit => e # the app's exit too: its at_exit hooks, then the fast finish
        ProcessExit.arm_fast_finish(e.status)
        raise
      rescue Exception => e # rubocop:disable Lint/RescueException -- report why the mold did not boot, then leave
        log.error(role, "failed", e)
        @link&.send_message(Protocol::BootFailed.new("#{e.class}: #{e.message}"))
        ProcessExit.now(1)
      end

      # Spawn requests from the monitor, and signals, until told to stop. A
      # stop, like QUIT, is graceful: the app's at_exit hooks run here too,
      # as in the process that loaded the app under Unicorn or Puma.
      def serve_requests
        loop do
          ready, = IO.select([@link.io, @signals.io])
          return if ready.include?(@signals.io) && !carry_on?(@signals.take)
          next unless ready.include?(@link.io)

          messages, closed = @link.read_ready
          return if closed || !carry_on?(messages.map { |message| on_message(message) })
        end
      end

      # @return [Symbol, nil] :stop, :reopen_logs or nothing left to do
      def on_message(message)
        case message
        when Protocol::SpawnWorker
          io = @link.take_io
          if io
            spawn_worker(message.number, message.generation, io, slot: message.slot, surge: message.surge,
              double_fork: true, in_child: -> { @link.io.close })
          end
          nil
        when Protocol::ReopenLogs then :reopen_logs
        when Protocol::Stop then :stop
        end
      end

      # @param actions [Array<Symbol, nil>]
      # @return [Boolean] false once a stop was asked for
      def carry_on?(actions)
        actions.each do |action|
          return false if action == :stop

          LogFiles.reopen_and_log(log, role) if action == :reopen_logs
        end
        true
      end

      # A mold's heap is the template of every worker: age young objects to old,
      # compact when its lineage has not (`compact: :auto`, {Heap::LastCompaction}:
      # compacting a heap that descends from a compacted one writes every
      # page for little) and seal malloc's free chunks last, so that workers'
      # new objects and mallocs land outside the pages they share. Free slots
      # are not filled here: each worker would then grow pages of its own.
      # The runs behind each choice: docs/REFORKING.md, "What a refork
      # costs, step by step".
      #
      # The GCs run at `prepare_heap nice:` in a thread of their own
      # ({Heap::LowPriority}), so that a mold preparing during a refork takes the
      # CPU the serving workers leave (docs/REFORKING.md, "Priority"); the
      # preparation may then take long, so it gets three spawn_timeouts of
      # its own (Deadlines#preparing).
      def prepare_heap
        option = config.prepare_heap
        return unless option

        @link&.send_message(Protocol::Preparing.new)
        options = (option.is_a?(Hash) ? option : {}).merge(nice: config.heap_nice)
        @heap_report = Heap.prepare(compact: :auto, **malloc_release, **config.heap_defaults, **options)
        log.info(role, @heap_report.to_s)
      end

      # Except in the first mold of a server that reforks on a schedule: its
      # workers are the next mold's candidates, and what they malloc while
      # warming up (method caches, memoized data) belongs in the holes the
      # boot left, not in fresh memory behind sealed ones. That mold only
      # gives the free chunks' whole pages back, so the worker promoted next
      # is as compact as one process warmed in one go (docs/COPY_ON_WRITE.md,
      # "malloc's free chunks"). Job workers seal there too ({Jobs.config}).
      def malloc_release
        (@separate && !@promoted && config.refork_after) ? {trim_malloc: true} : {seal_malloc: true}
      end

      def warn_about_shadowed_gems
        shadowed = LeanMonitor.shadowed
        return if shadowed.empty?

        log.info(role, "warning: the lean monitor loaded Ruby's own copy of #{shadowed.join(", ")} before Bundler: " \
          "the app runs that copy, not the Gemfile's " \
          "(#{LeanMonitor::FLAG} or #{LeanMonitor::SWITCH_ENV}=0 if it matters)")
      end

      # Thread pools that start their threads again in a forked child, each
      # by the method with which it notices the fork (concurrent-ruby's
      # executors: Solid Cache's background pool, Rails' async executors).
      FORK_AWARE_POOLS = {"Concurrent::RubyThreadPoolExecutor" => :ns_reset_if_forked}.freeze

      # Threads do not survive fork: a worker would start without them. A
      # thread marked `thread_variable_set(:fork_safe, true)` (the convention
      # Rails and Puma share: ActiveRecord's pool reaper) or run by a
      # fork-aware pool starts again by itself where it is needed, so it gets
      # no advice; the others are the app's, which it can start in after_fork.
      # (Either kind still keeps this mold from packing its GC page
      # descriptors, which needs no other thread alive: the heap report says
      # so; molds promoted from workers have no other thread.)
      def warn_about_threads
        others = Thread.list.reject { |thread| thread == Thread.current || !thread.alive? }
        pool_files = fork_aware_pool_files
        apps = others.reject { |thread| restarts_after_fork?(thread, pool_files) }
        return if apps.empty?

        names = apps.map { |thread| thread.name || thread.inspect }
        log.info(role, "warning: #{apps.size} thread(s) started at boot (#{names.join(", ")}) " \
          "will not exist in workers; " \
          "start them in after_fork, or mark them Thread.current.thread_variable_set(:fork_safe, true) " \
          "if they restart themselves")
      end

      # A pool's thread began in the file of the pool's fork check: its outermost frame says where it began.
      def restarts_after_fork?(thread, pool_files)
        return true if thread.thread_variable_get(:fork_safe)

        pool_files.include?(first_frame(thread)&.path)
      end

      # A thread created just now may not have run yet, and has no frame
      # to tell where it began: it gets half a second to start.
      def first_frame(thread)
        deadline = Clock.now + 0.5
        loop do
          locations = thread.backtrace_locations
          return locations&.last if locations.nil? || !locations.empty? || Clock.now > deadline

          sleep 0.005
        end
      end

      # @return [Array<String>] the files in which the loaded fork-aware pools start their threads
      def fork_aware_pool_files
        FORK_AWARE_POOLS.filter_map do |name, fork_check|
          next unless Object.const_defined?(name)

          Object.const_get(name).instance_method(fork_check).source_location&.first
        rescue NameError # a version without the fork check: its threads are the app's to restart
          nil
        end
      end
    end
  end
end
