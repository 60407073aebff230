# frozen_string_literal: true

require_relative "../fork_hook"
require_relative "../fork_safety"
require_relative "../linux"

module Herd
  module Server
    # How the server forks: with interrupts deferred across the fork (a
    # signal landing before the child set its own handlers must not run the
    # parent's code in the child), and without the fork hook's heap
    # preparation (the mold prepared its heap at boot).
    module Forking
      module_function

      # After a double fork our parent is the monitor (the subreaper) only once
      # the middle process has exited: wait for that, then ask to die with the
      # monitor. PR_SET_PDEATHSIG set earlier would fire at the middle
      # process's exit. Exits if the monitor is already gone.
      def await_adoption(monitor_pid, timeout)
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
        sleep 0.001 while Process.ppid != monitor_pid && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
        Linux.parent_death_signal("KILL")
        exit!(1) if Process.ppid != monitor_pid
      end

      # Forks a process whose parent will be the monitor (under a subreaper):
      # the middle process exits at once. Blocks until it has.
      def double_fork(&block)
        middle = fork_quietly do
          fork_quietly(&block)
          exit!(0)
        end
        Process.wait(middle)
        nil
      end

      # Marks the server's own descriptors (links, listeners, the log) as
      # kept, so that an app calling Herd.close_all_ios! in a hook closes
      # only its own.
      # @param ios [Array<IO, Object, nil>] anything not an open IO is skipped
      def keep_own(*ios)
        ios.each { |io| ForkSafety.keep_io(io) if io.is_a?(IO) && !io.closed? }
      end

      # @return [Integer] the child's pid
      def fork_quietly(&block)
        Thread.handle_interrupt(Object => :never) do
          ForkHook.without_heap_preparation do
            Process.fork { Thread.handle_interrupt(Object => :immediate) { block.call } }
          end
        end
      end
    end
  end
end
