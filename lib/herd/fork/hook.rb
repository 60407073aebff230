# frozen_string_literal: true

require_relative "../heap"
require_relative "callbacks"
require_relative "../env_switch"

module Herd
  # Intercepts every fork of the process through `Process._fork` (Ruby >= 3.1),
  # the one method that `Kernel#fork`, `Process.fork` and `IO.popen("-")` all
  # call, to run the {Herd.before_fork} and {Herd.after_fork} callbacks and,
  # when `prepare_heap` is on, {Heap.prepare} before the fork.
  #
  # The switch has the name it has in the pool and the server
  # (docs/API.md): `Herd::ForkHook.prepare_heap = false`, `true`, or a Hash
  # of {Heap.prepare} options; `HERD_PREPARE_HEAP=0` before
  # `require "herd/fork"`. For one fork: `fork(prepare_heap: false)` (also
  # `Process.fork(...)`, with or without a block), or nakayoshi_fork's
  # `fork(nakayoshi: false)` and `fork(cow_friendly: false)`, so that code
  # written for that gem opts out the same way.
  module ForkHook
    # This thread's override of the switch: false, true or a Hash; nil follows it.
    OVERRIDE = :__herd_fork_prepare_heap
    private_constant :OVERRIDE
    # This thread's box for the pids of the children it forks (see
    # {ProcessHook#_fork}); nil: none is kept.
    # @api private
    PID_BOX = :__herd_fork_pid_box
    # The environment switch read by `require "herd/fork"`.
    ENV_SWITCH = "HERD_PREPARE_HEAP"

    # Prepended to `Process.singleton_class`.
    # @api private
    module ProcessHook
      # The pid goes into the thread's box (Pool workers') before any
      # instruction where Ruby runs a trap handler: one that raises there
      # (Ctrl-C under `trap("INT") { raise Interrupt }`) would otherwise
      # unwind past the fork's return, and the child would be nobody's to
      # reap. Only a method's end and a taken branch check for interrupts.
      def _fork
        ForkHook.around_fork do
          pid = super
          Thread.current[PID_BOX]&.push(pid)
          pid
        end
      end
    end

    # Prepended to the singleton classes of Kernel and Process: accepts
    # `prepare_heap:` (and nakayoshi_fork's opt-outs) and passes everything
    # else through untouched.
    # @api private
    module ForkOptions
      # @param prepare_heap [Boolean, Hash, nil] for this fork: false skips
      #   the preparation, true or a Hash of {Heap.prepare} options does it
      #   whatever the global switch says; nil follows the switch
      # @param nakayoshi [Boolean, nil] nakayoshi_fork's opt-out: false is
      #   `prepare_heap: false`
      # @param cow_friendly [Boolean, nil] the same
      def fork(prepare_heap: nil, nakayoshi: nil, cow_friendly: nil, &block)
        prepare_heap = false if prepare_heap.nil? && (nakayoshi == false || cow_friendly == false)
        return super(&block) if prepare_heap.nil?
        return ForkHook.without_heap_preparation { super(&block) } unless prepare_heap

        ForkHook.with_heap_preparation(prepare_heap) { super(&block) }
      end
    end

    # Prepended to Kernel: the same, for the private `fork` every object has.
    # @api private
    module PrivateForkOptions
      include ForkOptions

      private :fork
    end

    @install_lock = Mutex.new
    @installed = false
    @prepare_heap = false
    @callbacks = ForkCallbacks.new

    class << self
      # Whether every fork prepares the heap first, and how: false (the
      # default of `require "herd"`; `require "herd/fork"` turns it on),
      # true ({Heap.prepare}'s defaults), or a Hash of {Heap.prepare}
      # options. `compact: true` compacts before the first fork of each
      # process only.
      # @return [Boolean, Hash]
      attr_reader :prepare_heap
      # @return [Heap::Report, nil] what the last heap preparation did
      attr_reader :last_report
      # @return [ForkCallbacks]
      # @api private
      attr_reader :callbacks

      # @param value [Boolean, Hash] see {prepare_heap}
      # @raise [ArgumentError] for anything else, or an unknown option
      def prepare_heap=(value)
        unless value == true || value == false || value.is_a?(Hash)
          raise ArgumentError, "prepare_heap: true, false or a Hash of Herd::Heap.prepare options, got #{value.inspect}"
        end
        unknown = value.is_a?(Hash) ? value.keys - Heap::OPTIONS : []
        unless unknown.empty?
          raise ArgumentError, "prepare_heap: unknown options #{unknown.join(", ")}; known: #{Heap::OPTIONS.join(", ")}"
        end
        refused = value.is_a?(Hash) && value.key?(:compact) && Heap.compact_refused(value[:compact])
        raise ArgumentError, "prepare_heap: #{refused}" if refused

        @prepare_heap = value
      end

      # What `require "herd/fork"` turns the switch to: on, unless
      # `HERD_PREPARE_HEAP` turns it off ({EnvSwitch.off?}).
      # @param env [Hash] the environment
      # @return [Boolean]
      # @api private
      def prepare_heap_from_env(env)
        !EnvSwitch.off?(env[ENV_SWITCH])
      end

      # Installs the interception. Idempotent and thread-safe.
      # @param prepare_heap [Boolean, Hash, nil] also set {prepare_heap}
      # @return [void]
      def install(prepare_heap: nil)
        self.prepare_heap = prepare_heap unless prepare_heap.nil?
        @install_lock.synchronize do
          return if @installed

          Process.singleton_class.prepend(ProcessHook)
          Process.singleton_class.prepend(ForkOptions)
          Kernel.singleton_class.prepend(ForkOptions)
          Kernel.prepend(PrivateForkOptions)
          @installed = true
        end
      end

      # @return [Boolean] whether {install} ran
      def installed?
        @installed
      end

      # Runs the block with heap preparation skipped for the forks it makes
      # from this thread; callbacks still run.
      # @yield the code whose forks skip the preparation
      # @return [Object] the block's value
      def without_heap_preparation(&block)
        with_override(false, &block)
      end

      # Forgets callbacks, reports and switches: a clean slate for tests.
      # @api private
      def reset!
        @callbacks.clear
        @prepare_heap = false
        @last_report = nil
        @compacted_in = nil
      end

      # Runs the block with heap preparation on for the forks it makes from
      # this thread, whatever the global switch says.
      # @param options [true, Hash] {Heap.prepare} options for those forks
      # @yield the code whose forks prepare the heap
      # @return [Object] the block's value
      def with_heap_preparation(options = true, &block)
        with_override(options, &block)
      end

      # @api private
      def around_fork(&block)
        ForkSafety.around_fork { fork_with_callbacks(&block) }
      end

      private

      def fork_with_callbacks
        @callbacks.run_before_fork
        override = Thread.current[OVERRIDE]
        wanted = override.nil? ? @prepare_heap : override
        prepare(wanted) if wanted
        pid = yield
        if pid.zero?
          # A block-form fork never returns in the child: forks it makes must
          # not inherit the parent's override, nor fill its pid box.
          Thread.current[OVERRIDE] = nil
          Thread.current[PID_BOX] = nil
          @callbacks.run_after_fork
        else
          @callbacks.run_after_fork_parent(pid)
        end
        pid
      end

      def with_override(value)
        previous = Thread.current[OVERRIDE]
        Thread.current[OVERRIDE] = value
        yield
      ensure
        Thread.current[OVERRIDE] = previous
      end

      def prepare(wanted)
        options = wanted.is_a?(Hash) ? wanted.dup : {}
        # Compacting again (compact: true, or Process.warmup on Ruby >= 3.3)
        # would move objects in pages already shared with earlier children,
        # which is the copying we are here to avoid.
        options.update(compact: false, process_warmup: false) if @compacted_in == Process.pid
        @last_report = Heap.prepare(**options)
        @compacted_in = Process.pid if @last_report.compacted
      end
    end
  end
end

require_relative "safety"
