# frozen_string_literal: true

module Herd
  # The blocks run around every fork, by phase, in registration order.
  #
  # Registration and removal are thread-safe; a fork runs the blocks that were
  # registered when it started. Used through {Herd.before_fork},
  # {Herd.after_fork} and {Herd.after_fork_parent}.
  # @api private
  class ForkCallbacks
    PHASES = %i[before_fork after_fork after_fork_parent].freeze

    def initialize
      @lock = Mutex.new
      @blocks = PHASES.to_h { |phase| [phase, [].freeze] }
    end

    # @return [Proc] the block
    def add(phase, block)
      raise ArgumentError, "#{phase} needs a block" unless block
      unless PHASES.include?(phase)
        raise ArgumentError, "unknown fork phase #{phase.inspect}; use one of #{PHASES.join(", ")}"
      end

      @lock.synchronize { @blocks[phase] = (@blocks[phase] + [block]).freeze }
      block
    end

    # @return [Boolean] whether the block was registered
    def remove(block)
      @lock.synchronize do
        found = false
        @blocks.transform_values! do |blocks|
          found ||= blocks.include?(block)
          (blocks - [block]).freeze
        end
        found
      end
    end

    # @return [Array<Proc>]
    def [](phase)
      @blocks.fetch(phase)
    end

    def clear
      @lock.synchronize { @blocks.transform_values! { [].freeze } }
    end

    # Runs the before-fork blocks; the first exception aborts the fork.
    # @raise [ForkCallbackError]
    def run_before_fork
      self[:before_fork].each do |block|
        block.call
      rescue Exception => e # rubocop:disable Lint/RescueException -- any failure must abort the fork with context
        raise ForkCallbackError,
          "before_fork callback at #{where(block)} raised #{e.class}: #{e.message}; the fork was not performed " \
          "(fix the callback, or unregister it with Herd.remove_fork_callback)"
      end
    end

    def run_after_fork
      run_reporting(:after_fork)
    end

    def run_after_fork_parent(pid)
      run_reporting(:after_fork_parent, pid)
    end

    private

    # After the fork an exception must not travel: in the child it would run the
    # parent's rescue clauses, in the parent it would lose the pid to reap.
    def run_reporting(phase, *args)
      self[phase].each do |block|
        block.call(*args)
      rescue => e
        report(phase, block, e)
      end
    end

    def report(phase, block, error)
      lines = ["herd: #{phase} callback at #{where(block)} raised #{error.class}: #{error.message} " \
        "(pid #{Process.pid}); the other callbacks still ran"]
      lines.concat(Array(error.backtrace).first(20).map { |line| "    #{line}" })
      warn(lines)
    end

    def where(block)
      file, line = block.source_location
      file ? "#{file}:#{line}" : block.inspect
    end
  end
end
