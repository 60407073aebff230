# frozen_string_literal: true

require "fiddle"
require_relative "extension"

module Herd
  # The few Linux system calls herd needs that Ruby does not expose: through
  # herd's C extension where it is built ({Extension}; `Linux::Native`), else
  # through Fiddle. Every method is a no-op returning false where the call is
  # unavailable (not Linux, no libc symbol).
  # @api private
  module Linux
    PR_SET_PDEATHSIG = 1
    PR_SET_CHILD_SUBREAPER = 36
    PR_GET_CHILD_SUBREAPER = 37
    PR_SET_MEMORY_MERGE = 67
    PR_GET_MEMORY_MERGE = 68

    class << self
      # @return [Boolean] whether this is Linux with prctl reachable
      def available?
        native? || !prctl_function.nil?
      end

      # Whether prctl goes through the C extension. A pool worker's call
      # right after its fork cost ~65 page faults through Fiddle (libffi
      # and Fiddle's argument handling, run for the first time in a process
      # whose pages are all still shared), ~37 more than through the
      # extension. Decided once, in the parent: {available?} is called
      # before forking.
      # @return [Boolean]
      def native?
        return @native if defined?(@native)

        @native = (Extension.unused_reason.nil? && defined?(Native)) ? true : false
      end

      # Asks the kernel to send `signal` to this process when its parent dies.
      # @param signal [String, Integer] e.g. "TERM", or a signal number (a
      #   process just forked saves the Signal.list lookup)
      # @return [Boolean] whether the kernel accepted it
      def parent_death_signal(signal)
        number = if signal.is_a?(Integer)
          signal
        else
          Signal.list.fetch(signal.to_s.delete_prefix("SIG")) { Integer(signal) }
        end
        prctl(PR_SET_PDEATHSIG, number)
      end

      # Makes this process adopt its orphaned descendants (and so be notified
      # of their death) instead of init.
      # @return [Boolean] whether the kernel accepted it
      def child_subreaper!
        prctl(PR_SET_CHILD_SUBREAPER, 1)
      end

      # Lets the kernel's same-page merging (KSM) merge this process's
      # identical anonymous pages, and those of every process it forks from
      # now on (Linux >= 6.4), or execs (Linux >= 6.7).
      # @param on [Boolean] false stops it and unmerges this process's pages
      # @return [Boolean] whether the kernel accepted it
      def memory_merge(on)
        prctl(PR_SET_MEMORY_MERGE, on ? 1 : 0)
      end

      # @return [Boolean] whether this process asks for merging, by itself
      #   or inherited from its parent (false where the kernel can't say)
      def memory_merge?
        # Through Fiddle: the C extension's prctl answers only 0 or an errno.
        prctl_function&.call(PR_GET_MEMORY_MERGE, 0, 0, 0, 0) == 1
      end

      # @return [Boolean] whether this process is a child subreaper
      def child_subreaper?
        return false unless available?

        flag = Fiddle::Pointer.malloc(Fiddle::SIZEOF_INT, Fiddle::RUBY_FREE)
        flag[0, Fiddle::SIZEOF_INT] = [0].pack("i")
        prctl_function.call(PR_GET_CHILD_SUBREAPER, flag.to_i, 0, 0, 0).zero? &&
          flag[0, Fiddle::SIZEOF_INT].unpack1("i") == 1
      end

      private

      def prctl(option, arg)
        return Native.prctl(option, arg).zero? if native?
        return false unless available?

        prctl_function.call(option, arg, 0, 0, 0).zero?
      end

      def prctl_function
        return @prctl if defined?(@prctl)

        @prctl = if RUBY_PLATFORM.include?("linux")
          Fiddle::Function.new(Fiddle::Handle::DEFAULT["prctl"],
            [Fiddle::TYPE_INT] + [Fiddle::TYPE_LONG] * 4, Fiddle::TYPE_INT)
        end
      rescue Fiddle::DLError
        @prctl = nil
      end
    end
  end
end
