# frozen_string_literal: true

require_relative "../process_exit"

module Herd
  class Pool
    # What every worker of one pool shares: the job, where items come from,
    # the item_board, and what to run when a worker starts and ends.
    # @api private
    class WorkerSetup
      attr_reader :job, :resolver, :item_board

      # @param after_fork [#call, nil] run in each new worker with its number
      # @param run_at_exit [Boolean] let worker processes run at_exit hooks
      def initialize(job:, item_board:, resolver: nil, after_fork: nil, run_at_exit: false)
        @job = job
        @item_board = item_board
        @resolver = resolver
        @after_fork = after_fork
        @run_at_exit = run_at_exit
      end

      # In a new worker process: who am I, and the user's after_fork.
      def enter_worker(number)
        Herd.worker_number = number
        @after_fork&.call(number)
      end

      # Ends a worker process. Without at_exit hooks by default: the parent's
      # (test runners, loggers, tempfile cleanup) must not run once per
      # worker. Either way stdout and stderr are flushed first, or a job's
      # lines still in Ruby's buffer (stdout to a file or a pipe) are lost.
      def leave_worker(status)
        @run_at_exit ? ProcessExit.graceful(status) : ProcessExit.now(status)
      end
    end
  end
end
