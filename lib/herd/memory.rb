# frozen_string_literal: true

require_relative "errors"
require_relative "memory/sample"
require_relative "memory/smaps"
require_relative "memory/process_tree"
require_relative "memory/table"
require_relative "memory/report"

module Herd
  # How much memory a process, or a tree of forked processes, really uses:
  # PSS, USS and what is still shared, from Linux's /proc/PID/smaps_rollup.
  #
  # @example
  #   Herd::Memory.sample.pss                 # this process, bytes
  #   puts Herd::Memory.tree(master_pid).to_table
  module Memory
    # Where the process tree is read from (tests point it at fixtures).
    # @api private
    PROC_ROOT = "/proc"

    class << self
      # @param pid [Integer]
      # @param proc_root [String] where procfs is mounted
      # @return [Sample]
      # @raise [NoSuchProcess] when there is no such process
      # @raise [MemoryReadError] when /proc is missing (not Linux) or reading is not allowed
      def sample(pid = Process.pid, proc_root: PROC_ROOT)
        Smaps.read(Integer(pid), proc_root: proc_root)
      end

      # A process and every descendant: the numbers to watch for a preforking
      # server or a worker pool. Descendants that exit while being read are
      # left out.
      # @param pid [Integer] the root, e.g. a server's master process
      # @param include_root [Boolean] false to report only the descendants
      # @param leave_out [Array<Integer>] descendants to leave out, with their
      #   own descendants: `herd mem` passes its own pid, so that run from
      #   inside the tree it measures it does not count itself. Never the root.
      # @param proc_root [String]
      # @return [Report] its {Report#left_out} lists the pids found and left out
      # @raise [NoSuchProcess] when the root does not exist
      # @raise [MemoryReadError] as {sample}
      def tree(pid, include_root: true, leave_out: [], proc_root: PROC_ROOT)
        pid = Integer(pid)
        processes = ProcessTree.new(proc_root: proc_root)
        root = row(processes, pid, proc_root) # raises for a missing root, include_root or not
        all = processes.descendants(pid)
        left_out = left_out_pids(processes, all, leave_out)
        descendants = (all - left_out).filter_map do |child|
          row(processes, child, proc_root)
        rescue NoSuchProcess
          nil
        end
        Report.new(include_root ? [root, *descendants] : descendants, tree: true, left_out: left_out)
      end

      # @param pid [Integer]
      # @param tree [Boolean] include every descendant (see {tree})
      # @param proc_root [String]
      # @return [Report]
      # @param leave_out [Array<Integer>] with tree: as {tree}
      def report(pid, tree: false, leave_out: [], proc_root: PROC_ROOT)
        return self.tree(pid, leave_out: leave_out, proc_root: proc_root) if tree

        pid = Integer(pid)
        Report.new([row(ProcessTree.new(proc_root: proc_root), pid, proc_root)])
      end

      private

      # The pids of leave_out found among the descendants, each followed by
      # its own descendants, in tree order.
      def left_out_pids(processes, descendants, leave_out)
        found = descendants & leave_out.map { |pid| Integer(pid) }
        found.flat_map { |pid| [pid, *processes.descendants(pid)] }.uniq & descendants
      end

      # Sample first: it is the read that tells a missing process from a
      # forbidden one.
      def row(processes, pid, proc_root)
        sample = sample(pid, proc_root: proc_root)
        Report::Row.new(pid: pid, ppid: processes.ppid(pid), title: processes.title(pid) || "?", sample: sample)
      end
    end
  end
end
