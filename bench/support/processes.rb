# frozen_string_literal: true

require "etc"

module Bench
  # A server's processes, read from /proc: the leader, its descendants and
  # anything else in its process group. Pitchfork puts its mold and workers
  # in groups of their own, and an orphan (a Puma fork_worker worker whose
  # parent stopped) leaves the tree but not the group, so neither the tree
  # nor the group alone finds them all.
  module Processes
    TICKS = Etc.sysconf(Etc::SC_CLK_TCK).to_f

    module_function

    # @return [Array<Hash>] :pid, :ppid, :pgrp, :cpu, :start, :title
    # The titles are read for the server's processes only: drivers poll this
    # while the server is measured, on the same cores.
    def of(leader)
      family(leader, table).filter_map { |process| titled(process) }
    end

    # CPU seconds a server's processes have used so far, each with the CPU
    # of the children it reaped (zombies included), so that a worker that
    # exited during the load still counts, in its parent's.
    # @return [Float]
    def tree_cpu(leader)
      family(leader, table(zombies: true)).sum { |process| process[:cpu] + process[:reaped_cpu] }
    end

    # CPU seconds of a server, split into workers (by process title) and the
    # rest (master, monitor, mold).
    # @return [Hash] :workers, :others (seconds), :processes (count)
    def cpu_by_role(leader)
      of(leader).each_with_object({workers: 0.0, others: 0.0, processes: 0}) do |process, totals|
        totals[process[:title].include?("worker") ? :workers : :others] += process[:cpu]
        totals[:processes] += 1
      end
    end

    # @param snapshot [Array<Hash>] processes as {of} returned them
    # @return [Array<Integer>] the pids still held by the same processes (pid and start time): on a busy
    #   machine pids come round again quickly
    def alive(snapshot)
      snapshot.select { |process| stat("/proc/#{process[:pid]}/stat")&.fetch(:start) == process[:start] }
        .map { |process| process[:pid] }
    end

    # @return [Float] CPU seconds all CPUs spent busy since boot (/proc/stat)
    def system_busy
      machine_cpu[:busy]
    rescue SystemCallError
      0.0
    end

    # @return [Hash] :busy and :idle, CPU seconds of all CPUs since boot (/proc/stat), read at one instant
    def machine_cpu
      user, nice, system, idle, iowait, irq, softirq, steal = File.read("/proc/stat")[/^cpu\s+(.*)$/, 1].split.map(&:to_i)
      {busy: (user + nice + system + irq + softirq + steal) / TICKS, idle: (idle + iowait) / TICKS}
    end

    # @return [Hash, nil] one /proc/PID/stat: :pid, :ppid, :pgrp, :minflt, :cpu (utime + stime), :reaped_cpu
    #   (cutime + cstime), :start; nil when gone, or a zombie unless `zombies`
    def stat(path, zombies: false)
      fields = File.read(path).split(") ", 2).last.split # after "pid (comm) "
      return nil if fields[0] == "Z" && !zombies # done, only waiting to be reaped

      {pid: path[/\d+/].to_i, ppid: fields[1].to_i, pgrp: fields[2].to_i, minflt: fields[7].to_i,
       cpu: (fields[11].to_i + fields[12].to_i) / TICKS, reaped_cpu: (fields[13].to_i + fields[14].to_i) / TICKS,
       start: fields[19].to_i} # with the pid, names a process even once pids are reused
    rescue SystemCallError
      nil
    end

    def table(zombies: false)
      Dir.glob("/proc/[0-9]*/stat").filter_map { |path| stat(path, zombies: zombies) }
    end

    # The leader, its process group and their descendants, from one table.
    def family(leader, table)
      children = table.group_by { |process| process[:ppid] }
      found = table.select { |process| process[:pgrp] == leader || process[:pid] == leader }
      queue = found.dup
      until queue.empty?
        kids = (children[queue.shift[:pid]] || []) - found
        found.concat(kids)
        queue.concat(kids)
      end
      found
    end

    def titled(process)
      process.merge(title: File.read("/proc/#{process[:pid]}/cmdline").tr("\0", " "))
    rescue SystemCallError
      nil # gone
    end
  end
end
