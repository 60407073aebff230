# frozen_string_literal: true

require "timeout"
require_relative "../errors"

module Herd
  # Raise inside a {Herd.map}-style block to stop the whole run early. The run
  # returns the value given (nil by default) instead of its results.
  #
  #   Herd.map(urls) { |url| raise Herd::Break, url if found?(url) }
  class Break < StandardError
    # @return [Object] what the run returns
    attr_reader :value

    def initialize(value = nil)
      @value = value
      super("Herd::Break")
    end
  end

  # A pool was used wrongly (closed, or called with a block it cannot run).
  class PoolError < Error; end

  # Where an item of a run failed: shared by {ItemError} and {TimeoutError}.
  module ItemContext
    # @return [Integer, nil] the item's position in the source
    attr_reader :index
    # @return [Integer, nil] the worker's pid (nil for threads)
    attr_reader :pid
    # @return [Integer, nil] {Herd.worker_number} of the worker
    attr_reader :worker_number

    private

    def remember_item(index, pid, worker_number)
      @index = index
      @pid = pid
      @worker_number = worker_number
    end
  end

  # Something about one item of a run went wrong in a worker. Carries where.
  # {TimeoutError} is one too, for `rescue` and `is_a?`, though it inherits
  # from the standard library's `Timeout::Error`.
  class ItemError < Error
    include ItemContext

    # @param message [String]
    # @param index [Integer, nil] the item's position
    # @param pid [Integer, nil] the worker's pid
    # @param worker_number [Integer, nil] the worker's number
    def initialize(message, index: nil, pid: nil, worker_number: nil)
      remember_item(index, pid, worker_number)
      super(message)
    end
  end

  # A worker process died (signal, exit!, segfault, OOM kill) while working on an item.
  class WorkerDied < ItemError
    # @return [Process::Status, nil]
    attr_reader :status

    def initialize(message, status: nil, **context)
      @status = status
      super(message, **context)
    end
  end

  # An item ran longer than the `timeout:` of its run; its worker was killed.
  #
  # A `Timeout::Error` (the standard library's), so `rescue Timeout::Error`
  # catches it as it catches every other timeout; and, like every error herd
  # raises, a {Herd::ItemError} and a {Herd::Error} for `rescue` and
  # `is_a?` (a class has one superclass: those two answer through
  # {Error.===} and {#is_a?}). Not `Herd::Timeout`: inside `module Herd`
  # that would hide the standard library's `Timeout`.
  class TimeoutError < ::Timeout::Error
    include ItemContext

    # @return [Float] the limit, in seconds
    attr_reader :seconds

    # @param message [String]
    # @param seconds [Float, nil] the limit
    # @param index [Integer, nil] the item's position
    # @param pid [Integer, nil] the worker's pid
    # @param worker_number [Integer, nil] the worker's number
    def initialize(message, seconds: nil, index: nil, pid: nil, worker_number: nil)
      @seconds = seconds
      remember_item(index, pid, worker_number)
      super(message)
    end

    # @param klass [Module]
    # @return [Boolean] true for {ItemError} and {Error} too
    def is_a?(klass)
      super || klass == ItemError || klass == Error
    end
    alias_method :kind_of?, :is_a?
  end

  # A block's result could not be sent back to the parent (Marshal refused it).
  # The worker lives on.
  class SerializationError < ItemError; end

  # An exception raised in a worker that could not itself be sent back: its
  # class name, message and backtrace travel as text instead.
  class RemoteError < Error
    # @return [String] the original exception's class name
    attr_reader :remote_class

    def initialize(remote_class, message, backtrace)
      @remote_class = remote_class
      super("#{remote_class}: #{message}")
      set_backtrace(backtrace) if backtrace
    end
  end
end
