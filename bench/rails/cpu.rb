# frozen_string_literal: true

require "set"
require_relative "../http/support"

module RailsBench
  module_function

  # CPU seconds (user + system) a server's process tree has used so far:
  # the root, its descendants and its process group (as
  # HttpBench.processes finds them, zombies included), each with the CPU of
  # the children it reaped, so that a worker that exited during the load
  # still counts, in its parent's.
  # @return [Float]
  def tree_cpu(root)
    table = Dir.glob("/proc/[0-9]*/stat").filter_map { |path| cpu_stat(path) }
    children = table.group_by { |process| process[:ppid] }
    found = table.select { |process| process[:pid] == root || process[:pgrp] == root }
    seen = found.to_set { |process| process[:pid] }
    queue = found.dup
    until queue.empty?
      kids = (children[queue.shift[:pid]] || []).reject { |process| seen.include?(process[:pid]) }
      kids.each { |process| seen << process[:pid] }
      found.concat(kids)
      queue.concat(kids)
    end
    found.sum { |process| process[:cpu] }
  end

  # @return [Hash, nil] :pid, :ppid, :pgrp, :cpu (utime + stime + cutime + cstime, seconds)
  def cpu_stat(path)
    fields = File.read(path).split(") ", 2).last.split # after "pid (comm) "
    {pid: path[/\d+/].to_i, ppid: fields[1].to_i, pgrp: fields[2].to_i, cpu: fields[11, 4].sum(&:to_i) / HttpBench::TICKS}
  rescue SystemCallError
    nil # gone
  end
end
