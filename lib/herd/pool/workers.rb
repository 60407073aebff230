# frozen_string_literal: true

require_relative "../heap"
require_relative "../clock"
require_relative "../cpu"
require_relative "settings"
require_relative "item_board"
require_relative "heap_policy"
require_relative "worker_setup"
require_relative "process_worker"
require_relative "rehearsal"
require_relative "thread_worker"
require_relative "inline_worker"
require_relative "registry"

module Herd
  class Pool
    # A pool's workers: their forking, recycling and replacing, the batches
    # handed to them, and their shutdown. A {Pool} has one for its whole life;
    # Herd.map and friends make one for each call (a one-call pool). The run
    # loop of a call ({Run}) asks it which workers are idle, hands them their
    # batches through it, and has it replace or end the ones it is done with.
    #
    # A one-call pool's worker processes are forked by their first batch
    # ({#dispatch}), and a batch may tell its worker to exit once done
    # ({#retires?}): nobody reuses them.
    # @api private
    class Workers
      # The worker class of each kind.
      CLASSES = {process: ProcessWorker, thread: ThreadWorker, inline: InlineWorker}.freeze
      # Seconds a worker halted mid-job gets to act on TERM (its handler runs
      # at Ruby's next interrupt check) before KILL.
      STOP_GRACE = 1.0
      # Bounds of the pause between two looks at workers that were asked to
      # exit (see #wait_for_exit): the shortest, seconds.
      EXIT_POLL_MIN = 0.0005
      # ... and the longest, seconds.
      EXIT_POLL_MAX = 0.01

      class << self
        # Makes something that owns workers (a {Pool}, or the workers of a
        # one-call pool) with `make`, yields it and closes it.
        # Interrupts (Ctrl-C, TERM, Timeout) are held back everywhere but
        # inside the work itself, so a signal landing between the making and
        # the block, or during the cleanup, cannot leave a worker running, a
        # zombie or a socket open. An exception closes it at once (workers
        # stopped mid-batch), the normal end politely.
        # @param make [#call] returns an object with #close and #terminate
        # @return [Object] the block's value
        def guarded(make)
          Thread.handle_interrupt(Object => :never) do
            owner = make.call
            Thread.handle_interrupt(Object => :immediate) { yield owner }
          rescue Exception # rubocop:disable Lint/RescueException -- whatever ends the work, no worker may outlive it
            owner&.terminate
            raise
          ensure
            owner&.close
          end
        end

        # Herd.map and friends: workers that read items from their own copy
        # of `source`, never more of them than it has items.
        # @param source [Source]
        # @param job [#call]
        # @param options [Hash] the pool options ({Pool#initialize})
        # @return [Workers] started
        def one_call(source, job, options)
          size = options[:threads] || options.fetch(:processes) { CPU.count }
          size = [size, source.size].min.clamp(1, nil) if source.size && size.is_a?(Integer) && size.positive?
          sized = options.merge((options.key?(:threads) ? :threads : :processes) => size)
          new(PoolSettings.build(**sized), job: job, resolver: source.resolver, one_call: true).start
        end
      end

      # @return [ItemBoard]
      attr_reader :item_board

      # @param settings [PoolSettings]
      # @param job [#call] run in the workers with (item) or (item, index)
      # @param resolver [#call, nil] Herd.map's items by position
      # @param one_call [Boolean] Herd.map's workers, thrown away after one call
      def initialize(settings, job:, resolver: nil, one_call: false)
        @settings = settings
        @one_call = one_call
        @owner = Process.pid
        @item_board = ItemBoard.new(size, shared: kind == :process)
        @setup = WorkerSetup.new(job: job, item_board: @item_board, resolver: resolver,
          after_fork: settings.after_fork, run_at_exit: settings.run_at_exit)
        @served = Array.new(size, 0)
        @list = []
      end

      # Forks (or starts) every worker; a one-call pool's processes wait for
      # their first batch. A signal while the workers fork must not leave the
      # ones already forked behind: this object then never reaches the caller.
      # @return [self]
      def start
        Thread.handle_interrupt(Object => :never) do
          Thread.handle_interrupt(Object => :immediate) { start_all }
          Registry.add(self)
        rescue Exception # rubocop:disable Lint/RescueException -- reap what was forked, then let it go on
          shutdown(polite: false)
          raise
        end
        self
      end

      # @return [Symbol] :process, :thread or :inline
      def kind
        @settings.kind
      end

      # @return [Integer]
      def size
        @settings.size
      end

      # @return [Array<Integer>] (empty for threads and inline)
      def pids
        @list.filter_map(&:pid)
      end

      # @return [Boolean] whether they are thrown away after one call (Herd.map)
      def one_call?
        @one_call
      end

      # Whether the workers were forked with this very source in memory
      # (Herd.map and friends): only positions need to travel then.
      def forked_with?(source)
        !source.resolver.nil? && source.resolver.equal?(@setup.resolver)
      end

      # A new call: no cancel flag left from the last one's early stop, and
      # inline workers enforce the call's timeout themselves.
      # @param timeout [Numeric, nil] the call's timeout:
      def begin_call(timeout)
        size.times { |slot| @item_board.cancel(slot, false) }
        @list.each { |worker| worker.item_timeout = timeout } if kind == :inline
      end

      # A retiring worker (sent its last batch) takes no more.
      # @param inflight [Hash] the workers busy with a batch
      # @return [Array] the workers free to take one
      def idle(inflight)
        @list.reject { |worker| inflight.key?(worker) || worker.retiring? }
      end

      # Whether a batch may tell its worker to exit once done (see
      # {WorkerLoop}): only a one-call pool's processes, which nobody reuses.
      def retires?
        one_call_processes?
      end

      # Whether #dispatch would fork this worker (a one-call pool's, not forked yet).
      def unforked?(worker)
        one_call_processes? && !worker.started?
      end

      # Hands a batch message to a worker; a one-call pool's worker not forked
      # yet is forked with it.
      # The child finds the batch in memory: it neither waits for it nor reads
      # or unmarshals it, and only the parent's loop runs between the forks.
      # @return [Boolean] whether the worker took it
      def dispatch(worker, message)
        return worker.send_batch(message) unless unforked?(worker)

        spawn(worker.number, worker, message)
        true
      end

      # Whether workers are replaced after max_items_per_worker items.
      def recycles?
        !@settings.max_items_per_worker.nil?
      end

      # Items a worker may still take before it is recycled.
      def quota(worker)
        max = @settings.max_items_per_worker
        max ? [max - @served[worker.number], 1].max : Float::INFINITY
      end

      # Counts a worker's answered items, and recycles it once it has served
      # max_items_per_worker.
      def served(worker, count)
        @served[worker.number] += count
        max = @settings.max_items_per_worker
        return unless max && @served[worker.number] >= max && @list[worker.number].equal?(worker)
        return if worker.retiring? # it exits on its own

        worker.stop
        worker.reap
        replace(worker)
      end

      # A fresh worker in a dead or retired one's place.
      def replace(worker)
        return if kind == :inline || @closed || !@list[worker.number].equal?(worker)

        worker.reap
        @served[worker.number] = 0
        @item_board.idle(worker.number)
        @item_board.cancel(worker.number, false)
        spawn(worker.number)
      end

      # Ends these workers now, when a one-call pool's run no longer needs
      # them: TERM, so that they flush what their jobs wrote to stdout, then
      # KILL for any still running after {STOP_GRACE}.
      def halt(workers)
        workers.each { |worker| worker.signal(:TERM) }
        running = wait_for_exit(workers, STOP_GRACE)
        running.each(&:kill)
        running.each(&:reap)
      end

      # Stops the workers after their current batch and reaps them. Idempotent.
      def close
        shutdown(polite: true)
      end

      # Stops the workers now (TERM, then KILL) and reaps them.
      def terminate
        shutdown(polite: false)
      end

      # @return [Boolean] whether every worker was reaped
      def closed?
        @closed ? true : false
      end

      private

      def one_call_processes?
        @one_call && kind == :process
      end

      def start_all
        return size.times { |number| @list[number] = ProcessWorker.new(number, @setup) } if one_call_processes?

        size.times { |number| spawn(number) }
      end

      # In the parent before each fork, as Herd.before_fork and the server's
      # before_fork run (docs/API.md); the number only if the hook takes it.
      def before_fork(number)
        hook = @settings.before_fork
        return unless hook

        (hook.respond_to?(:arity) && hook.arity.zero?) ? hook.call : hook.call(number)
      end

      # Held until the workers are reaped: it keeps the free-slot fillers
      # alive and malloc's free chunks sealed while the workers share the
      # parent's pages (replacements forked later included). A one-call pool
      # in a small process skips it: see {HeapPolicy}.
      def prepare_heap
        @heap_prepared = true
        options = HeapPolicy.options(@settings.prepare_heap, one_call: @one_call)
        return unless options

        @heap_report = Heap.prepare(fill_free_slots: true, seal_malloc: true, **options)
      end

      # After the last worker is reaped: the sealed chunks go back to malloc,
      # so a process that calls Herd.map in a loop reuses what it freed in
      # between instead of growing by it at every call. Freed earlier, while
      # workers share the pages, the chunk headers malloc writes would copy
      # those pages in this process.
      def release_heap
        report = @heap_report
        @heap_report = nil
        report&.release
      end

      # The new worker is in the list before it forks, so #shutdown knows
      # every pid it must reap even when a signal lands right after the fork.
      # The user's before_fork comes before the heap preparation (the first
      # fork only), so what it releases is collected by it; the rehearsal
      # (once per process) comes first of all.
      # @param worker [Object, nil] the unforked worker to start (#dispatch), else a new one
      # @param first [Array, nil] its first batch message
      def spawn(number, worker = nil, first = nil)
        if kind == :process
          Rehearsal.once
          before_fork(number)
          prepare_heap unless @heap_prepared
        end
        siblings = @list.each_with_index.filter_map { |other, slot| other&.io if slot != number }
        worker ||= CLASSES.fetch(kind).new(number, @setup)
        @list[number] = worker
        Thread.handle_interrupt(Object => :never) { first ? worker.start(siblings, first) : worker.start(siblings) }
      end

      # A signal may land anywhere in here — Ruby runs trap handlers (and
      # raises Interrupt) even where Thread.handle_interrupt defers other
      # interrupts. It may cut the waiting short (a second Ctrl-C need not sit
      # through shutdown_timeout), never the killing and reaping: those are
      # idempotent and retried until done, and the workers count as closed
      # only then, so a later close (the caller's ensure, the at_exit
      # registry) finishes what an interrupted one began.
      def shutdown(polite:)
        return if @closed || Process.pid != @owner

        begin
          Thread.handle_interrupt(Object => :immediate) { wind_down(polite) } unless @wound_down
        ensure
          @wound_down = true
          finish_shutdown
        end
      end

      def finish_shutdown
        signal = nil
        begin
          @list.each(&:kill) # only the ones not reaped yet: a reaped pid may be someone else's now
          @list.each(&:reap)
          free_once
          @closed = true
          Registry.delete(self)
        rescue SignalException => e
          signal ||= e
          retry
        end
        raise signal if signal
      end

      # Flags first: an interrupted free is leaked, never freed twice.
      def free_once
        unless @item_board_freed
          @item_board_freed = true
          @item_board.free
        end
        release_heap
      end

      def wind_down(polite)
        polite ? @list.each(&:stop) : @list.each { |worker| worker.signal(:TERM) }
        running = wait_for_exit(@list, @settings.shutdown_timeout)
        running.each { |worker| worker.signal(:TERM) } if polite
        wait_for_exit(running, 1.0) if polite
      end

      # @return [Array] the workers still running after `seconds`
      #
      # Woken by each worker's exit (its end of the channel closes), not by a
      # clock: a polling sleep here was a large share of what a small Herd.map
      # cost (docs/POOL.md, "Cost per call"). Between the EOF and the exit
      # status there is a moment (the kernel closes a process's files before
      # it becomes a zombie), and a worker whose EOF never comes (a grandchild
      # holds its socket) must still be seen to die: so reap is retried on a
      # short, growing pause.
      def wait_for_exit(workers, seconds)
        deadline = Clock.now + seconds
        pause = EXIT_POLL_MIN
        loop do
          workers = workers.reject { |worker| worker.reap(wait: false) }
          left = deadline - Clock.now
          return workers if workers.empty? || left <= 0

          pause = wait_for_exit_event(workers, [pause, left].min) ? EXIT_POLL_MIN : [pause * 2, EXIT_POLL_MAX].min
        end
      end

      # @return [Boolean] whether some worker's exit IO was ready
      def wait_for_exit_event(workers, seconds)
        watched = workers.filter_map { |worker| (io = worker.exit_io) && [io, worker] }.to_h
        if watched.empty?
          sleep(seconds)
          return false
        end

        ready, = IO.select(watched.keys, nil, nil, seconds)
        ready&.each { |io| watched.fetch(io).exit_io_ready }
        !ready.nil?
      end
    end
  end
end
