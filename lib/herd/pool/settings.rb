# frozen_string_literal: true

require_relative "../cpu"

module Herd
  class Pool
    # Validates options once, with errors that name the option and what it takes.
    # @api private
    module Validate
      module_function

      def whole(name, value, min:, allow_nil: false)
        return value if value.nil? && allow_nil
        return value if value.is_a?(Integer) && value >= min

        raise ArgumentError, "#{name}: must be a whole number >= #{min}, got #{value.inspect}"
      end

      def seconds(name, value)
        return value if value.nil?
        return value.to_f if value.is_a?(Numeric) && value.positive?

        raise ArgumentError, "#{name}: must be a number of seconds > 0, got #{value.inspect}"
      end

      def callable(name, value)
        return value if value.nil? || value.respond_to?(:call)

        raise ArgumentError, "#{name}: must respond to #call (a lambda or a method), got #{value.inspect}"
      end

      def one_of(name, value, allowed)
        return value if allowed.include?(value)

        raise ArgumentError, "#{name}: must be one of #{allowed.map(&:inspect).join(", ")}, got #{value.inspect}"
      end
    end

    # How a pool is made: worker kind and count, lifecycle hooks.
    # @api private
    PoolSettings = Struct.new(:processes, :threads, :before_fork, :after_fork, :run_at_exit, :prepare_heap,
      :max_items_per_worker, :shutdown_timeout, keyword_init: true) do
      def self.build(processes: nil, threads: nil, before_fork: nil, after_fork: nil, run_at_exit: false,
        prepare_heap: true, max_items_per_worker: nil, shutdown_timeout: 5)
        raise ArgumentError, "pass processes: or threads:, not both" if processes && threads

        new(
          processes: threads ? nil : Validate.whole(:processes, processes || CPU.count, min: 0),
          threads: Validate.whole(:threads, threads, min: 1, allow_nil: true),
          before_fork: Validate.callable(:before_fork, before_fork),
          after_fork: Validate.callable(:after_fork, after_fork),
          run_at_exit: run_at_exit ? true : false,
          prepare_heap: prepare_heap,
          max_items_per_worker: Validate.whole(:max_items_per_worker, max_items_per_worker, min: 1, allow_nil: true),
          shutdown_timeout: Validate.seconds(:shutdown_timeout, shutdown_timeout)
        )
      end

      # @return [Symbol] :process, :thread or :inline
      def kind
        return :thread if threads
        processes.zero? ? :inline : :process
      end

      # @return [Integer] how many workers
      def size
        threads || [processes, 1].max
      end
    end

    # How one call runs: batching, timeouts, retries, progress, callbacks.
    # @api private
    RunSettings = Struct.new(:chunk_size, :timeout, :on_timeout, :retries, :progress, :start, :finish,
      keyword_init: true) do
      def self.build(chunk_size: nil, timeout: nil, on_timeout: :raise, retries: 0, progress: false,
        start: nil, finish: nil)
        new(
          chunk_size: Validate.whole(:chunk_size, chunk_size, min: 1, allow_nil: true),
          timeout: Validate.seconds(:timeout, timeout),
          on_timeout: Validate.one_of(:on_timeout, on_timeout, %i[raise continue]),
          retries: Validate.whole(:retries, retries, min: 0),
          progress: progress,
          start: Validate.callable(:start, start),
          finish: Validate.callable(:finish, finish)
        )
      end
    end
  end
end
