# frozen_string_literal: true

require_relative "../herd"
require_relative "heap"
require_relative "clock"
require_relative "pool/errors"
require_relative "pool/settings"
require_relative "pool/source"
require_relative "pool/scoreboard"
require_relative "pool/heap_policy"
require_relative "pool/worker_setup"
require_relative "pool/process_worker"
require_relative "pool/rehearsal"
require_relative "pool/thread_worker"
require_relative "pool/inline_worker"
require_relative "pool/operations"
require_relative "pool/run"
require_relative "pool/registry"
require_relative "pool/methods"

module Herd
  # Worker processes (or threads) forked once and reused across calls.
  #
  # A pool's workers are forked when the pool is made, so the code they run
  # must exist by then: a pool has ONE job, given as `job:` to {.new} and to
  # {.open} alike (as `File.new` and `File.open` take the same arguments).
  # Its methods (map, each, ...) take no block — a block written later would
  # not exist in workers forked earlier. For one-off work, {Herd.map} and
  # friends fork, run and clean up in one call.
  #
  #   Herd::Pool.open(processes: 4, job: ->(path) { Thumbnail.make(path) }) do |pool|
  #     pool.map(todays_photos)
  #     pool.each(yesterdays_photos)
  #   end
  #
  # Items are marshalled to the workers and results back. A pool serves one
  # call at a time.
  class Pool
    # The worker class of each kind.
    # @api private
    WORKER_CLASSES = {process: ProcessWorker, thread: ThreadWorker, inline: InlineWorker}.freeze
    # Seconds a worker halted mid-job gets to act on TERM (its handler runs
    # at Ruby's next interrupt check) before KILL.
    STOP_GRACE = 1.0
    # Bounds of the pause between two looks at workers that were asked to
    # exit (see #wait_for_exit): the shortest, seconds.
    # @api private
    EXIT_POLL_MIN = 0.0005
    # ... and the longest, seconds.
    # @api private
    EXIT_POLL_MAX = 0.01

    class << self
      # Makes a pool, yields it, and closes it (workers stopped and reaped)
      # whatever happens.
      # @param job [#call] run in the workers with (item) or (item, index)
      # @param options [Hash] see {#initialize}
      # @yieldparam pool [Pool]
      # @return [Object] the block's value
      def open(job:, **options, &block)
        guarded(-> { new(job: job, **options) }, &block)
      end

      # Makes a pool with `make`, yields it and closes it.
      # Interrupts (Ctrl-C, TERM, Timeout) are held back everywhere but
      # inside the work itself, so a signal landing between the making and
      # the block, or during the cleanup, cannot leave a worker running, a
      # zombie or a socket open. An exception closes the pool at once
      # (workers stopped mid-batch), the normal end politely.
      # @api private
      def guarded(make)
        Thread.handle_interrupt(Object => :never) do
          pool = make.call
          Thread.handle_interrupt(Object => :immediate) { yield pool }
        rescue Exception # rubocop:disable Lint/RescueException -- whatever ends the work, no worker may outlive it
          pool&.terminate
          raise
        ensure
          pool&.close
        end
      end

      # Herd.map and friends: workers that read items from
      # their own copy of `source` and are thrown away after one call.
      # @api private
      def disposable(source, job, options)
        size = options[:threads] || options.fetch(:processes) { CPU.count }
        size = [size, source.size].min.clamp(1, nil) if source.size && size.is_a?(Integer) && size.positive?
        sized = options.merge((options.key?(:threads) ? :threads : :processes) => size)
        new(**sized, job: job, resolver: source.resolver, disposable: true)
      end
    end

    # @param job [#call] run in the workers with (item) or (item, index)
    # @param resolver [#call, nil] internal: Herd.map's items by position
    # @param disposable [Boolean] internal: Herd.map's one-call pools
    # @param options [Hash] how the pool is made
    # @option options [Integer] :processes worker processes (default: the CPUs
    #   this process may use, HERD_PROCESSES overrides); 0 runs inline, serially
    # @option options [Integer] :threads worker threads instead of processes
    # @option options [#call] :before_fork run in the parent before each worker
    #   process is forked (replacements included), with the worker's number if
    #   it takes an argument: close what workers must not inherit
    # @option options [#call] :after_fork run in each new worker with its number (reconnect here)
    # @option options [Boolean] :run_at_exit let workers run at_exit hooks when they exit
    # @option options [Boolean, Hash] :prepare_heap {Heap.prepare} (with these
    #   options) once before forking, so workers keep the parent's pages shared;
    #   `true` in a one-call pool (Herd.map) only when the process is big
    #   enough for it to pay ({HeapPolicy}), a Hash always
    # @option options [Integer] :max_items_per_worker replace a worker after this many items
    # @option options [Numeric] :shutdown_timeout seconds a worker gets to exit before TERM, then KILL
    def initialize(job: nil, resolver: nil, disposable: false, **options)
      raise ArgumentError, "a pool needs its job: Herd::Pool.new(job: ->(item) { ... }) or Herd::Pool.open(job: ...) { |pool| ... }" unless job
      raise ArgumentError, "job: must respond to #call (a lambda or a method), got #{job.inspect}" unless job.respond_to?(:call)

      @settings = PoolSettings.build(**options)
      @disposable = disposable
      # A one-call pool's processes are forked by their first batch (#dispatch).
      @fork_on_dispatch = disposable && kind == :process
      @lock = Mutex.new
      @owner = Process.pid
      @scoreboard = Scoreboard.new(size, shared: kind == :process)
      @setup = WorkerSetup.new(job: job, scoreboard: @scoreboard, resolver: resolver,
        after_fork: @settings.after_fork, run_at_exit: @settings.run_at_exit)
      @served = Array.new(size, 0)
      @workers = []
      # A signal while the workers fork must not leave the ones already
      # forked behind: this pool object never reaches the caller.
      Thread.handle_interrupt(Object => :never) do
        Thread.handle_interrupt(Object => :immediate) { start_workers }
        Registry.add(self)
      rescue Exception # rubocop:disable Lint/RescueException -- reap what was forked, then let it go on
        shutdown(polite: false)
        raise
      end
    end

    # @return [Symbol] :process, :thread or :inline
    def kind
      @settings.kind
    end

    # @return [Integer] number of workers
    def size
      @settings.size
    end

    # @return [Array<Integer>] worker pids (empty for threads and inline)
    def pids
      @workers.filter_map(&:pid)
    end

    # @!method map(source, **options)
    #   Runs the job on every item.
    #   @param source [Array, Range, Enumerable, Enumerator, Queue, Proc]
    #   @param options [Hash] chunk_size:, timeout:, on_timeout:, retries:, progress:, start:, finish:
    #   @return [Array] results in input order
    # @!method map_with_index(source, **options)
    #   @return [Array] like {#map}, with the job called as (item, index)
    # @!method each(source, **options)
    #   Runs the job on every item for its side effects; keeps no result.
    #   @return [Object] the source
    # @!method each_with_index(source, **options)
    #   @return [Object] the source; the job is called as (item, index)
    # @!method flat_map(source, **options)
    #   @return [Array] results, arrays spliced (Enumerable#flat_map)
    # @!method filter_map(source, **options)
    #   @return [Array] truthy results only (Enumerable#filter_map)
    # @!method any?(source, **options)
    #   @return [Boolean] whether the job returned truthy for some item; stops at the first
    # @!method all?(source, **options)
    #   @return [Boolean] whether the job returned truthy for every item; stops at the first falsy
    Operations::BY_METHOD.each do |name, (operation, with_index)|
      define_method(name) do |source, **options, &block|
        call(name, source, operation, with_index, options, block)
      end
    end

    # Stops the workers after their current batch and reaps them: each gets
    # shutdown_timeout seconds, then TERM, then KILL. Idempotent.
    # @return [void]
    def close
      shutdown(polite: true)
    end

    # Stops the workers now (TERM, then KILL after shutdown_timeout) and reaps them.
    # @return [void]
    def terminate
      shutdown(polite: false)
    end

    # @return [Boolean] whether {#close} or {#terminate} finished
    def closed?
      @closed ? true : false
    end

    # Used by {Herd.map} and friends with their own Source.
    # @api private
    def run_source(source, operation, with_index, options)
      settings = RunSettings.build(**options)
      @lock.synchronize do
        @workers.each { |worker| worker.item_timeout = settings.timeout } if kind == :inline
        Run.new(self, source, operation, settings, with_index: with_index, by_index: shares_memory_with?(source)).call
      end
    end

    # --- the rest is the Run's view of the pool --------------------------

    # @api private
    attr_reader :scoreboard

    # @api private
    def disposable?
      @disposable
    end

    # A retiring worker (sent its last batch) takes no more.
    # @api private
    def idle_workers(inflight)
      @workers.reject { |worker| inflight.key?(worker) || worker.retiring? }
    end

    # Whether a batch may tell its worker to exit once done (see
    # {WorkerLoop}): only a one-call pool's processes, which nobody reuses.
    # @api private
    def retires_workers?
      @fork_on_dispatch
    end

    # Whether #dispatch would fork this worker (a one-call pool's, not forked yet).
    # @api private
    def unforked?(worker)
      @fork_on_dispatch && !worker.started?
    end

    # Hands a batch message to a worker; a one-call pool's worker not forked
    # yet is forked with it.
    # The child finds the batch in memory: it neither waits for it nor reads
    # or unmarshals it, and only the parent's loop runs between the forks.
    # @api private
    # @return [Boolean] whether the worker took it
    def dispatch(worker, message)
      return worker.send_batch(message) unless unforked?(worker)

      spawn(worker.number, worker, message)
      true
    end

    # Whether workers are replaced after max_items_per_worker items.
    # @api private
    def recycles_workers?
      !@settings.max_items_per_worker.nil?
    end

    # Items a worker may still take before it is recycled.
    # @api private
    def quota(worker)
      max = @settings.max_items_per_worker
      max ? [max - @served[worker.number], 1].max : Float::INFINITY
    end

    # @api private
    def served(worker, count)
      @served[worker.number] += count
      max = @settings.max_items_per_worker
      return unless max && @served[worker.number] >= max && @workers[worker.number].equal?(worker)
      return if worker.retiring? # it exits on its own

      worker.stop
      worker.reap
      replace(worker)
    end

    # A fresh worker in a dead or retired one's place.
    # @api private
    def replace(worker)
      return if kind == :inline || @closed || !@workers[worker.number].equal?(worker)

      worker.reap
      @served[worker.number] = 0
      @scoreboard.idle(worker.number)
      @scoreboard.cancel(worker.number, false)
      spawn(worker.number)
    end

    # Ends these workers now, when a disposable pool's run
    # no longer needs them: TERM, so that they flush what their jobs
    # wrote to stdout, then KILL for any still running after {STOP_GRACE}.
    # @api private
    def halt(workers)
      workers.each { |worker| worker.signal(:TERM) }
      running = wait_for_exit(workers, STOP_GRACE)
      running.each(&:kill)
      running.each(&:reap)
    end

    # @api private
    def scoreboard_reset
      size.times { |slot| @scoreboard.cancel(slot, false) }
    end

    private

    # In the parent before each fork, as Herd.before_fork and the server's
    # before_fork run (docs/API.md); the number only if the hook takes it.
    def before_fork(number)
      hook = @settings.before_fork
      return unless hook

      (hook.respond_to?(:arity) && hook.arity.zero?) ? hook.call : hook.call(number)
    end

    # Only positions need to travel when the workers were forked with this
    # very source in memory (Herd.map and friends).
    def shares_memory_with?(source)
      !source.resolver.nil? && source.resolver.equal?(@setup.resolver)
    end

    def call(name, source_object, operation_class, with_index, options, block)
      if block
        raise PoolError, "a pool runs the job it was made with; its workers were forked before this block existed. " \
          "Give it as job: to Herd::Pool.new or Herd::Pool.open, or use Herd.#{name} for one-off work"
      end
      raise PoolError, "this pool is closed; make a new one" if @closed
      raise PoolError, "a pool serves one call at a time; it cannot be used from its own callbacks" if @lock.owned?

      source = Source.for(source_object)
      operation = operation_class.new(source, source_object)
      run_source(source, operation, with_index, options)
    end

    def start_workers
      return size.times { |number| @workers[number] = ProcessWorker.new(number, @setup) } if @fork_on_dispatch

      size.times { |number| spawn(number) }
    end

    # Held until the pool closes: it keeps the free-slot fillers alive and
    # malloc's free chunks sealed while the workers share the parent's
    # pages (replacements forked later included). A one-call pool in a
    # small process skips it: see {HeapPolicy}.
    def prepare_heap
      @heap_prepared = true
      options = HeapPolicy.options(@settings.prepare_heap, disposable: @disposable)
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

    # The new worker is in @workers before it forks, so #shutdown knows
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
      siblings = @workers.each_with_index.filter_map { |other, slot| other&.io if slot != number }
      worker ||= WORKER_CLASSES.fetch(kind).new(number, @setup)
      @workers[number] = worker
      Thread.handle_interrupt(Object => :never) { first ? worker.start(siblings, first) : worker.start(siblings) }
    end

    # A signal may land anywhere in here — Ruby runs trap handlers (and
    # raises Interrupt) even where Thread.handle_interrupt defers other
    # interrupts. It may cut the waiting short (a second Ctrl-C need not sit
    # through shutdown_timeout), never the killing and reaping: those are
    # idempotent and retried until done, and the pool counts as closed only
    # then, so a later close (the caller's ensure, the at_exit registry)
    # finishes what an interrupted one began.
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
        @workers.each(&:kill) # only the ones not reaped yet: a reaped pid may be someone else's now
        @workers.each(&:reap)
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
      unless @scoreboard_freed
        @scoreboard_freed = true
        @scoreboard.free
      end
      release_heap
    end

    def wind_down(polite)
      polite ? @workers.each(&:stop) : @workers.each { |worker| worker.signal(:TERM) }
      running = wait_for_exit(@workers, @settings.shutdown_timeout)
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
