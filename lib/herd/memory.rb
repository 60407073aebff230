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
      # @param proc_root [String]
      # @return [Report]
      # @raise [NoSuchProcess] when the root does not exist
      # @raise [MemoryReadError] as {sample}
      def tree(pid, include_root: true, proc_root: PROC_ROOT)
        pid = Integer(pid)
        processes = ProcessTree.new(proc_root: proc_root)
        root = row(processes, pid, proc_root) # raises for a missing root, include_root or not
        descendants = processes.descendants(pid).filter_map do |child|
          row(processes, child, proc_root)
        rescue NoSuchProcess
          nil
        end
        Report.new(include_root ? [root, *descendants] : descendants, tree: true)
      end

      # @param pid [Integer]
      # @param tree [Boolean] include every descendant (see {tree})
      # @param proc_root [String]
      # @return [Report]
      def report(pid, tree: false, proc_root: PROC_ROOT)
        return self.tree(pid, proc_root: proc_root) if tree

        pid = Integer(pid)
        Report.new([row(ProcessTree.new(proc_root: proc_root), pid, proc_root)])
      end

      private

      # Sample first: it is the read that tells a missing process from a
      # forbidden one.
      def row(processes, pid, proc_root)
        sample = sample(pid, proc_root: proc_root)
        Report::Row.new(pid: pid, ppid: processes.ppid(pid), title: processes.title(pid) || "?", sample: sample)
      end
    end
  end
end
