# frozen_string_literal: true

require_relative "../herd"
require_relative "pool/errors"
require_relative "pool/settings"
require_relative "pool/source"
require_relative "pool/operations"
require_relative "pool/workers"
require_relative "pool/run"
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
    class << self
      # Makes a pool, yields it, and closes it (workers stopped and reaped)
      # whatever happens.
      # @param job [#call] run in the workers with (item) or (item, index)
      # @param options [Hash] see {#initialize}
      # @yieldparam pool [Pool]
      # @return [Object] the block's value
      def open(job:, **options, &block)
        Workers.guarded(-> { new(job: job, **options) }, &block)
      end
    end

    # @param job [#call] run in the workers with (item) or (item, index)
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
    def initialize(job: nil, **options)
      unless job
        raise ArgumentError, "a pool needs its job: Herd::Pool.new(job: ->(item) { ... }) " \
          "or Herd::Pool.open(job: ...) { |pool| ... }"
      end
      unless job.respond_to?(:call)
        raise ArgumentError, "job: must respond to #call (a lambda or a method), got #{job.inspect}"
      end

      settings = PoolSettings.build(**options)
      @lock = Mutex.new
      @workers = Workers.new(settings, job: job).start
    end

    # @return [Symbol] :process, :thread or :inline
    def kind
      @workers.kind
    end

    # @return [Integer] number of workers
    def size
      @workers.size
    end

    # @return [Array<Integer>] worker pids (empty for threads and inline)
    def pids
      @workers.pids
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
      @workers.close
    end

    # Stops the workers now (TERM, then KILL after shutdown_timeout) and reaps them.
    # @return [void]
    def terminate
      @workers.terminate
    end

    # @return [Boolean] whether {#close} or {#terminate} finished
    def closed?
      @workers.closed?
    end

    private

    def call(name, source_object, operation_class, with_index, options, block)
      if block
        raise PoolError, "a pool runs the job it was made with; its workers were forked before this block existed. " \
          "Give it as job: to Herd::Pool.new or Herd::Pool.open, or use Herd.#{name} for one-off work"
      end
      raise PoolError, "this pool is closed; make a new one" if closed?
      raise PoolError, "a pool serves one call at a time; it cannot be used from its own callbacks" if @lock.owned?

      source = Source.for(source_object)
      operation = operation_class.new(source, source_object)
      settings = RunSettings.build(**options)
      @lock.synchronize { Run.new(@workers, source, operation, settings, with_index: with_index).call }
    end
  end
end
