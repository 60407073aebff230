# frozen_string_literal: true

require "etc"
require "socket"
require_relative "../support/report"

module HttpBench
  ROOT = Bench::Report::ROOT
  HOST = "127.0.0.1"
  GEM_HINT = "bundle config set --local with bench && bundle install"
  TICKS = Etc.sysconf(Etc::SC_CLK_TCK).to_f

  module_function

  def now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  def loadavg
    Bench::Report.loadavg
  end

  # A port nobody listens on now: bind port 0, note the port, release it.
  def free_port
    server = TCPServer.new(HOST, 0)
    server.addr[1]
  ensure
    server&.close
  end

  # One HTTP/1.1 request without a Connection header.
  # @return [Hash, nil] :status and :keep_alive (the server did not say
  #   "Connection: close"), nil when nothing answers yet
  def probe(port, path, timeout: 2)
    socket = Socket.tcp(HOST, port, connect_timeout: timeout)
    socket.write("GET #{path} HTTP/1.1\r\nHost: #{HOST}:#{port}\r\n\r\n")
    head = read_head(socket, now + timeout)
    return nil unless head

    status = head[/\AHTTP\/1\.\d (\d{3})/, 1].to_i
    {status: status, keep_alive: !head.match?(/^connection:\s*close/i)}
  rescue SystemCallError, IOError, SocketError
    nil
  ensure
    socket&.close
  end

  def read_head(socket, deadline)
    head = +""
    until head.include?("\r\n\r\n")
      left = deadline - now
      return nil if left <= 0 || !socket.wait_readable(left)

      chunk = socket.read_nonblock(4096, exception: false)
      return nil if chunk.nil?

      head << chunk if chunk.is_a?(String)
    end
    head
  end

  # The server's processes: the leader, its descendants, and anything else
  # in its process group (Pitchfork puts its mold and workers in groups of
  # their own; an orphan may have left the tree but not the group).
  # @return [Array<Hash>] :pid, :title, :cpu (user + system seconds)
  # The titles are read for the server's processes only: drivers poll this
  # while the server is measured, on the same cores.
  def processes(leader)
    table = Dir.glob("/proc/[0-9]*/stat").filter_map { |path| stat(path) }
    children = table.group_by { |process| process[:ppid] }
    found = table.select { |process| process[:pgrp] == leader || process[:pid] == leader }
    queue = found.dup
    until queue.empty?
      kids = (children[queue.shift[:pid]] || []) - found
      found.concat(kids)
      queue.concat(kids)
    end
    found.filter_map { |process| titled(process) }
  end

  def stat(path)
    fields = File.read(path).split(") ", 2).last.split # after "pid (comm) "
    return nil if fields[0] == "Z" # a zombie: done, only waiting to be reaped
    {pid: path[/\d+/].to_i, ppid: fields[1].to_i, pgrp: fields[2].to_i,
     cpu: (fields[11].to_i + fields[12].to_i) / TICKS, # utime, stime
     start: fields[19].to_i} # with the pid, names a process even once pids are reused
  rescue SystemCallError
    nil # gone
  end

  def titled(process)
    process.merge(title: File.read("/proc/#{process[:pid]}/cmdline").tr("\0", " "))
  rescue SystemCallError
    nil # gone
  end

  # CPU seconds of a server, split into workers (by process title) and the
  # rest (master, monitor, mold).
  # @return [Hash] :workers, :others (seconds), :processes (count)
  def server_cpu(leader)
    processes(leader).each_with_object({workers: 0.0, others: 0.0, processes: 0}) do |process, totals|
      totals[process[:title].include?("worker") ? :workers : :others] += process[:cpu]
      totals[:processes] += 1
    end
  end

  # @return [Float] CPU seconds all CPUs spent busy since boot (/proc/stat)
  def system_busy
    user, nice, system, _idle, _iowait, irq, softirq, steal = File.read("/proc/stat")[/^cpu (.*)$/, 1].split.map(&:to_i)
    (user + nice + system + irq + softirq + steal) / TICKS
  rescue SystemCallError
    0.0
  end

  # @return [Float] CPU seconds of waited-for children of this process (wrk)
  def children_cpu
    times = Process.times
    times.cutime + times.cstime
  end
end
