# frozen_string_literal: true

# What Pitchfork's example app reports in every response, read the same way:
# the PSS of this worker's parent (the monitor or master) and of every child
# of the parent's main thread, each from /proc/PID/smaps_rollup parsed line
# by line into a Hash of every field. The parsing is part of the workload:
# about a thousand objects per request, which the workers' mallocs place.
module ClusterMemory
  LINE = /(?<field>\w+):\s+(?<size>\d+) kB$/

  # @return [Hash{Symbol=>Integer}] the smaps_rollup fields of `pid` in kB, nil if it is gone
  def self.rollup(pid)
    File.read("/proc/#{pid}/smaps_rollup").each_line.with_object({}) do |line, fields|
      match = line.match(LINE)
      fields[match[:field].to_sym] = match[:size].to_i if match
    end
  rescue Errno::ENOENT, Errno::ESRCH # the process just exited
    nil
  end

  # @return [String] Pitchfork's two lines, in MiB
  def self.report
    parent = Process.ppid
    siblings = File.read("/proc/#{parent}/task/#{parent}/children").split
    total = [parent, *siblings].filter_map { |pid| rollup(pid) }.sum { |fields| fields.fetch(:Pss) }
    worker = rollup(Process.pid).fetch(:Pss)
    format("Single Worker Memory Usage: %.1f MiB\nTotal Cluster Memory Usage: %.1f MiB\n", worker / 1024.0, total / 1024.0)
  end
end
