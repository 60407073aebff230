# frozen_string_literal: true

require_relative "channel"
require_relative "../linux"
require_relative "../fork/hook"
require_relative "../process_exit"
require_relative "process_transport"
require_relative "worker_loop"

module Herd
  class Pool
    # The parent's handle on one worker process.
    # @api private
    class ProcessWorker
      # How a worker ends on TERM: its handler flushes stdout and exits with
      # the status a shell gives a process killed by that signal.
      TERM_STATUS = 128 + Signal.list.fetch("TERM")
      # Looked up here, not in the child: a new worker's first Ruby code runs
      # while every page it writes is a copy-on-write fault, and Signal.list
      # alone makes a Hash of 60-odd strings (docs/POOL.md, "Cost per call").
      PARENT_DEATH_SIGNAL = Signal.list.fetch("KILL")
      # TERM (the parent stopping a call, closing a pool) ends the worker at
      # once, as the default action would, but with stdout flushed first.
      # Made once: a proc made in each child is one more object on a shared page.
      TERM_HANDLER = proc { ProcessExit.now(TERM_STATUS) }

      # @return [Integer] the worker's number, also its slot on the item board
      attr_reader :number
      # @return [Integer, nil]
      attr_reader :pid

      # @param number [Integer]
      # @param setup [WorkerSetup] what every worker of the pool shares
      def initialize(number, setup)
        @number = number
        @setup = setup
      end

      # Forks the worker. Heap preparation is the pool's job (once, before the
      # first worker), so this fork skips it.
      # @param siblings [Array<IO>] parent-side descriptors the child must close,
      #   or a sibling's death would go unnoticed (its socket kept open by us)
      # @param first [Array, nil] its first batch message: the child finds it
      #   in memory, with no round trip and nothing to read or unmarshal
      def start(siblings, first = nil)
        # Kept where #reap closes them, whatever moment a signal interrupts this.
        parent_end, child_end = Channel.pair
        @channel = parent_end
        @child_end = child_end
        @retiring = last_batch?(first)
        parent_pid = Process.pid
        from_main_thread = Thread.current == Thread.main
        Linux.available? # resolves prctl here, once, rather than in every child
        # Made here too: every object a new worker makes lands on a page it
        # shares with this process, and copies it.
        transport = ProcessTransport.new(child_end)
        worker_loop = WorkerLoop.new(job: @setup.job, transport: transport, item_board: @setup.item_board,
          slot: @number, resolver: @setup.resolver)
        # A signal landing in the child before its handlers are set would raise
        # out of Process.fork and run the parent's code in the child: defer
        # every interrupt until the child is inside #serve. A trap handler
        # runs all the same, and one that raises between the fork's return
        # and @pid's assignment would lose the child: the fork hook keeps
        # its pid in a box first.
        forked = Thread.current[ForkHook::PID_BOX] = []
        @pid = Thread.handle_interrupt(Object => :never) do
          ForkHook.without_heap_preparation do
            Process.fork do
              Thread.handle_interrupt(Object => :immediate) do
                parent_end.close
                siblings.each { |io| io.close unless io.closed? }
                serve(transport, worker_loop, parent_pid, from_main_thread, first)
              end
            rescue SystemExit
              raise # run_at_exit: true asked for a normal exit
            rescue Exception # rubocop:disable Lint/RescueException -- nothing may escape a worker
              ProcessExit.now(1)
            end
          end
        end
        child_end.close
        self
      ensure
        Thread.current[ForkHook::PID_BOX] = nil
        @pid ||= forked&.find(&:positive?)
      end

      # @return [IO] readable when results arrive or the worker dies
      def io
        @channel&.io
      end

      # @return [Boolean] whether it could be sent
      def send_batch(message)
        @retiring ||= last_batch?(message)
        @channel.send_message(message)
        true
      rescue Errno::EPIPE, Errno::ECONNRESET, IOError
        false
      end

      # @return [Array(Array, Boolean)] messages, and whether the worker is gone
      def read_ready
        @channel.read_ready
      end

      # @return [Boolean] whether it was forked (a one-call pool forks a
      #   worker with its first batch)
      def started?
        !@channel.nil?
      end

      # @return [Boolean] whether it was sent its last batch, after which it
      #   exits on its own
      def retiring?
        @retiring ? true : false
      end

      # Asks the worker to finish: it exits after its current batch. Our end
      # stays open for reading, so its EOF tells when the worker is gone
      # (see {#exit_io}). A retiring worker needs no message.
      def stop
        return unless @channel

        @channel.send_message([:stop]) unless @retiring
      rescue Errno::EPIPE, Errno::ECONNRESET, IOError
        nil
      ensure
        @channel&.close_write
      end

      # @return [IO, nil] readable when the worker may have exited (its end
      #   of the channel closes as it exits), nil once that was seen, or
      #   when there is nothing to watch
      def exit_io
        return nil if @exit_seen || @status || @channel.nil? || @channel.closed?

        @channel.io
      end

      # Called when {#exit_io} is readable: drops what the worker still sent
      # and notes its EOF.
      def exit_io_ready
        @exit_seen = true if @channel.discard_ready
      end

      # Does nothing once the worker is reaped: its pid may be another
      # process's by now.
      def signal(name)
        return if @status || @pid.nil?

        Process.kill(name, @pid)
      rescue Errno::ESRCH
        nil
      end

      def kill
        signal(:KILL)
      end

      # Like reap(wait: false), but what the worker sent before it exited
      # stays readable: a retiring worker exits right after its results.
      # @return [Boolean]
      def exited?
        return true if @status
        return false unless @pid

        _, status = Process.waitpid2(@pid, Process::WNOHANG)
        @status = status if status
        !status.nil?
      rescue Errno::ECHILD
        true
      end

      # @param wait [Boolean] block until it exits
      # @return [Process::Status, nil] nil while it runs (wait: false)
      def reap(wait: true)
        return close_channels && @status if @status # #exited? may have collected it
        return close_channels && :gone unless @pid # interrupted before it forked

        _, status = Process.waitpid2(@pid, wait ? 0 : Process::WNOHANG)
        return nil unless status

        close_channels
        @status = status
      rescue Errno::ECHILD
        @status = nil
        close_channels
        :gone
      end

      def to_s
        "worker #{@number} (pid #{@pid})"
      end

      # @return [String] how it ended, for error messages
      def describe_exit(status)
        return "its exit status was collected by someone else" unless status.is_a?(Process::Status)
        return "was killed by SIG#{Signal.signame(status.termsig)}" if status.signaled?
        return "exited on SIGTERM" if status.exitstatus == TERM_STATUS

        "exited with status #{status.exitstatus}"
      end

      private

      def close_channels
        @child_end&.close
        @channel&.close
        true
      end

      def last_batch?(message)
        message ? message[6] == true : false
      end

      def serve(transport, worker_loop, parent_pid, from_main_thread, first)
        @setup.leave_worker(work(transport, worker_loop, parent_pid, from_main_thread, first))
      end

      # @return [Integer] the exit status
      def work(transport, worker_loop, parent_pid, from_main_thread, first)
        # Die with the parent even if it is SIGKILLed, and catch the race where
        # it died before the request took effect. The kernel ties this to the
        # forking THREAD: from any other thread, the end of that thread would
        # kill the worker, so there the socket's EOF alone tells of the parent's death.
        Linux.parent_death_signal(PARENT_DEATH_SIGNAL) if from_main_thread
        return 1 if Process.ppid != parent_pid

        # Ctrl-C reaches the whole process group; the parent decides what to do.
        trap("INT", "IGNORE")
        trap("TERM", TERM_HANDLER)
        @setup.enter_worker(@number)
        worker_loop.run(first)
        0
      rescue SignalException
        1
      rescue Exception => e # rubocop:disable Lint/RescueException -- report a failed after_fork, then exit
        transport.deliver([:results, nil, [[nil, :error, e]], true])
        1
      end
    end
  end
end
