# frozen_string_literal: true

require_relative "heap"
require_relative "fork_callbacks"

module Herd
  # Intercepts every fork of the process through `Process._fork` (Ruby >= 3.1),
  # the one method that `Kernel#fork`, `Process.fork` and `IO.popen("-")` all
  # call, to run {Herd.before_fork}-style callbacks and, when copy-on-write
  # friendliness is on, {Heap.prepare} before the fork.
  #
  # Per-call opt-out, as nakayoshi_fork spells it: `fork(nakayoshi: false)` or
  # `fork(cow_friendly: false)` (also `Process.fork(...)`, with or without a
  # block). Global switch: `Herd::ForkHook.cow_friendly = false`, or
  # `HERD_COW_FRIENDLY=0` in the environment before `require "herd/fork"`.
  module ForkHook
    OPT_OUT = :__herd_fork_opt_out
    OPT_IN = :__herd_fork_opt_in
    private_constant :OPT_OUT, :OPT_IN

    # Prepended to `Process.singleton_class`.
    module ProcessHook
      def _fork
        ForkHook.around_fork { super }
      end
    end

    # Prepended to the singleton classes of Kernel and Process: accepts the
    # opt-out keywords and passes everything else through untouched.
    module ForkOptions
      def fork(nakayoshi: true, cow_friendly: true, &block)
        return super(&block) if nakayoshi && cow_friendly

        ForkHook.without_heap_preparation { super(&block) }
      end
    end

    # Prepended to Kernel: the same, for the private `fork` every object has.
    module PrivateForkOptions
      include ForkOptions

      private :fork
    end

    @install_lock = Mutex.new
    @installed = false
    @cow_friendly = false
    @heap_options = {}
    @callbacks = ForkCallbacks.new

    class << self
      # @return [Boolean] prepare the heap before each fork (see {Heap.prepare})
      attr_accessor :cow_friendly
      # @return [Hash] keywords for {Heap.prepare}; `compact: true` compacts
      #   before the first fork of each process only
      attr_accessor :heap_options
      # @return [Heap::Report, nil] what the last heap preparation did
      attr_reader :last_report
      # @return [ForkCallbacks]
      attr_reader :callbacks

      # Installs the interception. Idempotent and thread-safe.
      # @param cow_friendly [Boolean, nil] also switch heap preparation on or off
      # @return [void]
      def install(cow_friendly: nil)
        self.cow_friendly = cow_friendly unless cow_friendly.nil?
        @install_lock.synchronize do
          return if @installed

          Process.singleton_class.prepend(ProcessHook)
          Process.singleton_class.prepend(ForkOptions)
          Kernel.singleton_class.prepend(ForkOptions)
          Kernel.prepend(PrivateForkOptions)
          @installed = true
        end
      end

      # @return [Boolean]
      def installed?
        @installed
      end

      # Runs the block with heap preparation skipped for the forks it makes
      # from this thread; callbacks still run.
      def without_heap_preparation(&block)
        with_flag(OPT_OUT, &block)
      end

      # Forgets callbacks, reports and switches: a clean slate for tests.
      # @api private
      def reset!
        @callbacks.clear
        @cow_friendly = false
        @heap_options = {}
        @last_report = nil
        @compacted_in = nil
      end

      # Runs the block with heap preparation on for the forks it makes from
      # this thread, whatever the global switch says.
      def with_heap_preparation(&block)
        with_flag(OPT_IN, &block)
      end

      # @api private
      def around_fork(&block)
        ForkSafety.around_fork { fork_with_callbacks(&block) }
      end

      private

      def fork_with_callbacks
        @callbacks.run_before_fork
        prepare_heap if (cow_friendly || Thread.current[OPT_IN]) && !Thread.current[OPT_OUT]
        pid = yield
        if pid.zero?
          # A block-form fork never returns in the child: forks it makes must
          # not inherit the parent's opt-out.
          Thread.current[OPT_OUT] = nil
          Thread.current[OPT_IN] = nil
          @callbacks.run_after_fork_child
        else
          @callbacks.run_after_fork_parent(pid)
        end
        pid
      end

      def with_flag(key)
        previous = Thread.current[key]
        Thread.current[key] = true
        yield
      ensure
        Thread.current[key] = previous
      end

      def prepare_heap
        options = heap_options.dup
        # Compacting again (compact: true, or Process.warmup on Ruby >= 3.3)
        # would move objects in pages already shared with earlier children,
        # which is the copying we are here to avoid.
        options.update(compact: false, warmup: false) if @compacted_in == Process.pid
        @last_report = Heap.prepare(**options)
        @compacted_in = Process.pid if @last_report.compacted
      end
    end
  end
end

require_relative "fork_safety"
