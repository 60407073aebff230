# frozen_string_literal: true

require "support/server_log"

module Herd
  # The log of a server whose stdout and stderr share a pipe: a thread reads
  # each line as it comes, so the pipe never fills and blocks the server.
  class PipedLog
    include ServerLog

    # @param reader [IO] the pipe's reading end (closed at its end of file)
    def initialize(reader)
      @lines = []
      @ended = false
      @lock = Mutex.new
      @changed = ConditionVariable.new
      @reader = Thread.new { follow(reader) }
    end

    # @return [Array<String>] every line so far
    def lines
      @lock.synchronize { @lines.dup }
    end

    # @return [Boolean] whether no process holds the pipe's writing end any more
    def ended?
      @lock.synchronize { @ended }
    end

    # Waits (bounded) until every line is read: the pipe ends once every
    # process of the server's tree has exited.
    def finish(timeout: 5)
      @reader.join(timeout)
    end

    private

    def await(seen, seconds)
      @lock.synchronize { @changed.wait(@lock, seconds) if @lines.size == seen && !@ended }
    end

    def follow(reader)
      reader.each_line do |line|
        @lock.synchronize do
          @lines << line
          @changed.broadcast
        end
      end
    ensure
      reader.close
      @lock.synchronize do
        @ended = true
        @changed.broadcast
      end
    end
  end
end
