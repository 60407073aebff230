# frozen_string_literal: true

require_relative "channel"
require_relative "../process_exit"
require_relative "item_board"
require_relative "worker_loop"
require_relative "process_transport"

module Herd
  class Pool
    # Runs a worker's loop once in this process, before its first pool
    # worker forks: one item over a real channel, as a worker runs it.
    #
    # Ruby fills a call site's method cache the first time it runs there, and
    # a worker's loop is code the parent never runs: every new worker filled
    # a hundred-odd caches of its own, each a write to memory it shares with
    # the parent, so a copy-on-write fault. Filled here, they are inherited
    # (docs/POOL.md, "Cost per call"). Once per process is enough (method
    # caches survive garbage collection), and a forked process inherits the
    # caches with the flag.
    # @api private
    module Rehearsal
      JOB = ->(item) { item }
      # The batch a worker is forked with, then one it reads: its last.
      FIRST = [:batch, 0, false, false, [0], nil, false].freeze
      NEXT = [:batch, 0, false, false, [1], nil, true].freeze
      @done = false

      module_function

      # Rehearses unless this process (or the one it was forked from) did.
      def once
        return if @done

        @done = true
        run
      end

      # What a worker does with its first batch, where only this process sees it.
      def run
        parent_end, child_end = Channel.pair
        item_board = ItemBoard.new(1, shared: true)
        parent_end.send_message(NEXT) # a few bytes: the socket holds them
        WorkerLoop.new(job: JOB, transport: ProcessTransport.new(child_end), item_board: item_board, slot: 0,
          resolver: JOB).run(FIRST)
        parent_end.read_ready
        # Ruby's fork flushes them too: nothing changes but the caches.
        ProcessExit.flush_standard_streams
      ensure
        parent_end&.close
        child_end&.close
        item_board&.free
      end
    end
  end
end
