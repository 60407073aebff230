# frozen_string_literal: true

# Runs rounds of "start `herd serve`, SIGKILL its monitor at a chosen moment,
# see what is left" for test/faults/monitor_kill_test.rb, in a process of its
# own that is a child subreaper: whatever the dead monitor leaves behind is
# reparented here (not to PID 1), so it can be listed, reported and reaped.
#
#   ruby -I lib test/support/fault_runner.rb '{"root": ..., "workers": 2, "rounds": [{"moment": "spawn", "delay": 0.01}, ...]}'
#
# Prints one JSON object per round on stdout: the moment, the delay, what the
# log said last before the kill, the processes still alive 2 s after it (pid,
# state, title), and whether the port could be bound again by then.

require "json"
require "rbconfig"
require "socket"
require "tmpdir"
require "fileutils"
require "herd/linux"

module Herd
  class FaultRunner
    READY = /monitor: ready: \d+ workers serving/
    LISTENING = %r{monitor: listening on http://127\.0\.0\.1:(\d+)}
    GRACE = 2.0
    APP = "run ->(env) { [200, {}, [\"ok\"]] }\n"

    def initialize(root:, workers:)
      @root = root
      @workers = workers
      @dir = Dir.mktmpdir("herd-faults-runner")
      File.write(File.join(@dir, "config.ru"), APP)
    end

    def run(rounds)
      raise "not a child subreaper" unless Linux.child_subreaper!

      Linux.parent_death_signal("KILL") # the test went away: so do we (it kills our group)
      rounds.each_with_index do |round, index|
        result = round(round.fetch("moment"), round.fetch("delay"))
        $stdout.puts JSON.generate(result.merge(round: index))
        $stdout.flush
      end
    ensure
      FileUtils.rm_rf(@dir)
    end

    private

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    def round(moment, delay)
      start_server
      port = prepare(moment, delay)
      before_kill = @lines.size
      Process.kill(:KILL, @pid)
      killed_at = now
      Process.wait(@pid)
      left, port_free, clean_after, port_after = watch(port, killed_at)
      {moment: moment, delay: delay, port: port, last_line: @lines[before_kill - 1]&.chomp&.sub(/\A\S+ /, ""),
       phase: phase(moment, @lines.first(before_kill)),
       left: left, port_free: port_free, clean_after: clean_after, port_free_after: port_after,
       log: (left.empty? && port_free) ? nil : @lines.last(25).map(&:chomp)}
    ensure
      kill_everything_left
      @follower&.join(2)
    end

    def start_server
      @lines = []
      reader, writer = IO.pipe
      lib = File.join(@root, "lib")
      @pid = Process.spawn(RbConfig.ruby, "-I", lib, File.join(@root, "exe", "herd"), "serve", "config.ru",
        "-l", "127.0.0.1:0", "-w", @workers.to_s, chdir: @dir, out: writer, err: writer, in: File::NULL)
      writer.close
      @follower = Thread.new do
        reader.each_line { |line| @lines << line }
      ensure
        reader.close
      end
    end

    # Waits for the moment, then `delay` seconds.
    # @return [Integer] the server's port
    def prepare(moment, delay)
      port = Integer(wait_for(LISTENING)[1])
      unless moment == "boot"
        wait_for(READY)
        case moment
        when "spawn" then Process.kill(:TTIN, @pid)
        when "refork" then Process.kill(:USR2, @pid)
        when "idle" then nil
        else raise ArgumentError, "unknown moment #{moment}"
        end
      end
      sleep delay
      port
    end

    def wait_for(pattern, timeout: 30)
      deadline = now + timeout
      loop do
        @lines.each do |line|
          match = line.match(pattern)
          return match if match
        end
        raise "no log line matched #{pattern.inspect}; log:\n#{@lines.join}" if now > deadline || !@follower.alive?

        sleep 0.005
      end
    end

    # What the server was doing when it was killed, from its log.
    def phase(moment, lines)
      case moment
      when "spawn"
        lines.grep(/worker #{@workers} \(gen 0\), pid \d+ ready/).empty? ? "new worker not ready yet" : "new worker ready"
      when "refork"
        if lines.grep(/worker \d+ \(gen 1\), pid \d+ ready/).any? then "rolling out"
        elsif lines.grep(/mold \(gen 1\), pid \d+ ready/).any? then "new mold ready"
        elsif lines.grep(/promoting/).any? then "promoting"
        else "USR2 not handled yet"
        end
      when "boot"
        lines.grep(READY).any? ? "ready" : "booting"
      else "idle"
      end
    end

    # Until every descendant is gone and the port binds again, or GRACE
    # seconds after the kill: reaps what was reparented to us, lists the rest.
    # @return [Array(Array<Hash>, Boolean, Float, Float)] left, port free, when clean, when the port was free
    def watch(port, killed_at)
      port_free_after = clean_after = nil
      loop do
        reap
        left = descendants
        clean_after ||= (now - killed_at).round(3) if left.empty?
        port_free_after ||= (now - killed_at).round(3) if bindable?(port)
        return [[], true, clean_after, port_free_after] if clean_after && port_free_after
        return [left.map { |pid| describe(pid) }.compact, !port_free_after.nil?, clean_after, port_free_after] if now - killed_at > GRACE

        sleep 0.01
      end
    end

    def reap
      loop { break unless Process.waitpid(-1, Process::WNOHANG) }
    rescue Errno::ECHILD
      nil
    end

    # A listening socket still open in an orphan makes bind fail with
    # EADDRINUSE. SO_REUSEADDR on, as herd's own listener has it: without it,
    # a connection in TIME_WAIT would make the port look taken.
    def bindable?(port)
      socket = Socket.new(:INET, :STREAM)
      socket.setsockopt(:SOCKET, :REUSEADDR, true)
      socket.bind(Addrinfo.tcp("127.0.0.1", port))
      socket.listen(1)
      true
    rescue Errno::EADDRINUSE
      false
    ensure
      socket&.close
    end

    # @return [Array<Integer>] our live descendants (zombies not counted)
    def descendants
      parents = {}
      states = {}
      Dir.children("/proc").each do |entry|
        next unless entry.match?(/\A\d+\z/)

        fields = File.read("/proc/#{entry}/stat").split(") ").last.split
        states[Integer(entry)] = fields[0]
        parents[Integer(entry)] = Integer(fields[1])
      rescue Errno::ENOENT, Errno::ESRCH
        nil
      end
      found = []
      frontier = [Process.pid]
      until frontier.empty?
        children = parents.select { |_, ppid| frontier.include?(ppid) }.keys
        found.concat(children)
        frontier = children
      end
      found.reject { |pid| states[pid] == "Z" }
    end

    def describe(pid)
      stat = File.read("/proc/#{pid}/stat").split(") ").last.split
      title = File.read("/proc/#{pid}/cmdline").tr("\0", " ").strip
      {pid: pid, state: stat[0], ppid: Integer(stat[1]), title: title}
    rescue Errno::ENOENT, Errno::ESRCH
      nil
    end

    # Our descendants only: after the report, nothing of this round may
    # survive into the next.
    def kill_everything_left
      3.times do
        left = descendants
        break if left.empty?

        left.each do |pid|
          Process.kill(:KILL, pid)
        rescue Errno::ESRCH
          nil
        end
        sleep 0.05
        reap
      end
    end
  end
end

if $PROGRAM_NAME == __FILE__
  options = JSON.parse(ARGV.fetch(0))
  Herd::FaultRunner.new(root: options.fetch("root"), workers: options.fetch("workers")).run(options.fetch("rounds"))
end
