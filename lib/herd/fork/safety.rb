# frozen_string_literal: true

require "monitor"
require_relative "hook"

module Herd
  # What an application tells herd about forking, and the tools to make a
  # process safe to fork from (a warmed worker becomes the next mold by
  # forking: whatever it holds, the new mold and its workers inherit).
  module ForkSafety
    @safe = true
    @kept = {}
    @listeners = []
    @lock = ::Monitor.new

    class << self
      # Marks this process as never to be forked from (it holds something
      # that cannot cross fork: a thread mid-operation, a native handle).
      # @param reason [String] logged by the server
      def no_longer_fork_safe!(reason = "the application said so")
        return unless @safe

        @safe = false
        @reason = reason
        @listeners.each { |listener| listener.call(reason) }
      end

      # @return [Boolean]
      def fork_safe?
        @safe
      end

      # @return [String, nil] why this process is not fork safe
      attr_reader :reason

      # The server's worker learns of it at once.
      # @api private
      def on_unsafe(&block)
        @listeners << block
      end

      # @param io [IO] kept open through close_all_ios!
      # @return [IO]
      # @api private
      def keep_io(io)
        @kept[io.fileno] = true
        io
      end

      def kept?(io)
        @kept.key?(io.fileno)
      rescue IOError
        false
      end

      # Closes every IO this process inherited except standard streams and
      # those kept with {keep_io}. Only this process's descriptors close: the
      # peer of an inherited socket sees no FIN or RST while another process
      # (the one we were forked from) still holds it.
      # @return [Integer] how many were closed
      def close_all_ios!
        closed = 0
        ObjectSpace.each_object(IO) do |io|
          next if io.closed? || [$stdin, $stdout, $stderr].include?(io) || io.fileno <= 2 || kept?(io)

          io.close
          closed += 1
        rescue IOError, SystemCallError
          nil
        end
        closed
      end

      # Runs the block with forks held off: a fork (from any thread) waits
      # until it is over. For code holding a native lock that a forked child
      # would inherit locked.
      def prevent_fork
        ForkHook.install
        if @lock.mon_owned?
          yield
        else
          @lock.synchronize { yield }
        end
      end

      # The fork hook waits here.
      # @api private
      def around_fork(&block)
        raise Error, "fork called inside Herd.prevent_fork; move the fork out of the block" if @lock.mon_owned?

        @lock.synchronize(&block)
      end
    end
  end

  class << self
    # @see ForkSafety.no_longer_fork_safe!
    def no_longer_fork_safe!(reason = "the application said so")
      ForkSafety.no_longer_fork_safe!(reason)
    end

    # @see ForkSafety.fork_safe?
    def fork_safe?
      ForkSafety.fork_safe?
    end

    # Keeps `io` open through {close_all_ios!}.
    # @return [IO]
    def keep_io(io)
      ForkSafety.keep_io(io)
    end

    # @see ForkSafety.close_all_ios!
    def close_all_ios!
      ForkSafety.close_all_ios!
    end

    # @see ForkSafety.prevent_fork
    def prevent_fork(&block)
      ForkSafety.prevent_fork(&block)
    end
  end
end
