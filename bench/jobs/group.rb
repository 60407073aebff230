# frozen_string_literal: true

require_relative "../support/clock"
require_relative "../support/processes"

module JobsBench
  # The processes of one setup: each command spawned, all in the process
  # group of the first (so that Bench::Sampler and Bench::Processes find
  # them all from its pid), their output appended to one log. Stopped with
  # TERM, each one's graceful stop, then SIGKILL to whatever is left, so no
  # run leaves a process behind for the next.
  class Group
    LEFTOVER_GRACE = 2

    attr_reader :pids, :log_path

    def initialize(commands, env:, chdir:, log_path:)
      @commands = commands
      @env = env
      @chdir = chdir
      @log_path = log_path
      @pids = []
      @reaped = {}
    end

    # @return [Integer] the first process's pid, the group's id
    def leader = @pids.first

    def start
      File.open(@log_path, "a") do |log|
        @commands.each do |argv|
          @pids << Process.spawn(@env, *argv, chdir: @chdir, pgroup: leader || true, in: File::NULL, out: log, err: log)
        end
      end
      self
    end

    # @return [Array<Integer>] the spawned pids that have exited (reaped now)
    def exited
      @pids.select { |pid| reap(pid) }
    end

    # TERM to each spawned process, `timeout` s for them to exit, then
    # SIGKILL to the rest of the group. Never raises.
    # @return [Array<String>] what went wrong
    def stop(timeout:)
      return [] if @pids.empty?

      snapshot = Bench::Processes.of(leader)
      problems = []
      @pids.each do |pid|
        Process.kill("TERM", pid) unless reap(pid)
      rescue SystemCallError
        next
      end
      deadline = Bench::Clock.now + timeout
      sleep 0.05 until @pids.all? { |pid| reap(pid) } || Bench::Clock.now > deadline
      late = @pids.reject { |pid| reap(pid) }
      problems << "pids #{late.join(", ")} did not exit #{timeout} s after TERM" unless late.empty?
      left = leftovers(snapshot)
      problems << "processes #{left.join(", ")} still there after the spawned ones exited" unless left.empty? || !late.empty?
      kill(snapshot)
      problems
    end

    def log
      File.read(@log_path)
    rescue SystemCallError
      ""
    end

    def log_tail(lines = 30)
      log.lines.last(lines).join
    end

    private

    def reap(pid)
      return true if @reaped[pid]

      @reaped[pid] = true if Process.wait2(pid, Process::WNOHANG)
      @reaped[pid] || false
    rescue Errno::ECHILD
      @reaped[pid] = true
    end

    def leftovers(snapshot)
      deadline = Bench::Clock.now + LEFTOVER_GRACE
      loop do
        left = Bench::Processes.alive(snapshot)
        return left if left.empty? || Bench::Clock.now >= deadline

        sleep 0.05
      end
    end

    # The group while its leader is not reaped (its id cannot have been
    # reused), then each process of the snapshot that is still the same one.
    def kill(snapshot)
      targets = (@reaped[leader] ? [] : [-leader]) + Bench::Processes.alive(snapshot)
      targets.each do |target|
        Process.kill("KILL", target)
      rescue SystemCallError
        next
      end
      deadline = Bench::Clock.now + 2
      sleep 0.02 until @pids.all? { |pid| reap(pid) } || Bench::Clock.now > deadline
    end
  end
end
