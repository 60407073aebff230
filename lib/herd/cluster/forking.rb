# frozen_string_literal: true

require_relative "../fork/hook"
require_relative "../fork/safety"
require_relative "../clock"
require_relative "../linux"
require_relative "../process_exit"

module Herd
  module Cluster
    # How the server forks: with interrupts deferred across the fork (a
    # signal landing before the child set its own handlers must not run the
    # parent's code in the child), and without the fork hook's heap
    # preparation (the mold prepared its heap at boot).
    # @api private
    module Forking
      module_function

      # After a double fork our parent is the monitor (the subreaper) only once
      # the middle process has exited: wait for that, then ask to die with the
      # monitor. PR_SET_PDEATHSIG set earlier would fire at the middle
      # process's exit. When the middle process is gone and our parent is not
      # the monitor, the monitor died (we were adopted by PID 1 or another
      # subreaper): exit at once, or we would hold the listeners open.
      # @param death_signal [String] what the monitor's death sends us (a
      #   job worker's TERM stops it gracefully: its jobs go back to their queue)
      def await_adoption(monitor_pid, timeout, death_signal: "KILL")
        # Not Process.ppid: the middle process may be gone already, and if
        # the monitor died first our parent is then PID 1 or a subreaper.
        middle = @middle_pid || Process.ppid
        deadline = Clock.now + timeout
        while (parent = Process.ppid) == middle && parent != monitor_pid
          orphaned! if Clock.now > deadline

          sleep 0.001
        end
        Linux.parent_death_signal(death_signal)
        orphaned! if Process.ppid != monitor_pid
      end

      # The monitor is gone: nobody will ever ask us for anything.
      def orphaned!
        ProcessExit.now(1)
      end

      # Forks a process whose parent will be the monitor (under a subreaper):
      # the middle process exits at once. Blocks until it has.
      def double_fork(&block)
        middle = fork_quietly do
          @middle_pid = Process.pid # the grandchild inherits it: see await_adoption
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
