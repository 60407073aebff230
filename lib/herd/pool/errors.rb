# frozen_string_literal: true

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

  # Something about one item of a run went wrong in a worker. Carries where.
  class ItemError < Error
    # @return [Integer, nil] the item's position in the source
    attr_reader :index
    # @return [Integer, nil] the worker's pid (nil for threads)
    attr_reader :pid
    # @return [Integer, nil] {Herd.worker_number} of the worker
    attr_reader :worker_number

    def initialize(message, index: nil, pid: nil, worker_number: nil)
      @index = index
      @pid = pid
      @worker_number = worker_number
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
  class Timeout < ItemError
    # @return [Float] the limit, in seconds
    attr_reader :seconds

    def initialize(message, seconds: nil, **context)
      @seconds = seconds
      super(message, **context)
    end
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
