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

$LOAD_PATH.unshift File.expand_path("..", __dir__) # test/, for support/
require "json"
require "rbconfig"
require "socket"
require "tmpdir"
require "fileutils"
require "herd/clock"
require "herd/linux"
require "herd/memory"
require "support/procfs"
require "support/server_process"

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
      Clock.now
    end

    def round(moment, delay)
      # In this process's group, which the test kills whole if this process is stuck.
      @server = ServerProcess.new([RbConfig.ruby, "-I", File.join(@root, "lib"), File.join(@root, "exe", "herd"), "serve",
        "config.ru", "-l", "127.0.0.1:0", "-w", @workers.to_s], dir: @dir, pgroup: false, timeout: 30)
      port = prepare(moment, delay)
      lines = @server.lines
      @server.signal(:KILL)
      killed_at = now
      @server.wait(log: false) # what survived the monitor is watched, not waited for
      left, port_free, clean_after, port_after = watch(port, killed_at)
      {moment: moment, delay: delay, port: port, last_line: lines.last&.chomp&.sub(/\A\S+ /, ""),
       phase: phase(moment, lines), left: left, port_free: port_free, clean_after: clean_after, port_free_after: port_after,
       log: (left.empty? && port_free) ? nil : @server.lines.last(25).map(&:chomp)}
    ensure
      kill_everything_left
    end

    # Waits for the moment, then `delay` seconds.
    # @return [Integer] the server's port
    def prepare(moment, delay)
      port = Integer(@server.wait_for(LISTENING)[1])
      unless moment == "boot"
        @server.wait_for(READY)
        case moment
        when "spawn" then @server.signal(:TTIN)
        when "refork" then @server.signal(:USR2)
        when "idle" then nil
        else raise ArgumentError, "unknown moment #{moment}"
        end
      end
      sleep delay
      port
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

    # @return [Array<Integer>] our live descendants (zombies not counted),
    #   orphans reparented to us included
    def descendants
      Memory::ProcessTree.new.descendants(Process.pid).select { |pid| Procfs.alive?(pid) }
    end

    def describe(pid)
      stat = Procfs.stat(pid) or return nil
      {pid: pid, state: stat[0], ppid: Integer(stat[1]), title: Memory::ProcessTree.new.title(pid)}
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
