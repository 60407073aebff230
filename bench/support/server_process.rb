# frozen_string_literal: true

require_relative "clock"
require_relative "processes"

module Bench
  # One server the driver started: spawned in a process group of its own,
  # so that workers, molds and whatever they fork can all be signalled at
  # once; its output in a log file; ready when the caller's check says so,
  # polled rather than slept for; stopped gracefully, then SIGKILLed and
  # reaped within a timeout, so that no run leaves a server behind for the
  # next one to share the cores with.
  class ServerProcess
    class Failed < StandardError; end

    LEFTOVER_GRACE = 2 # seconds the other processes get once the leader has exited

    attr_reader :name, :pid, :log_path
    # @return [Process::Status, nil] the leader's, once reaped
    attr_reader :status

    # @param name [String] for messages
    # @param argv [Array<String>] the command
    # @param env [Hash] more environment
    # @param chdir [String] the directory it runs in
    # @param log_path [String] its stdout and stderr
    def initialize(name, argv, chdir:, log_path:, env: {})
      @name = name
      @argv = argv
      @env = env
      @chdir = chdir
      @log_path = log_path
    end

    # Spawns the server and polls the block until it returns a truthy value.
    # @param timeout [Numeric] seconds before giving up
    # @param awaiting [String, #call] what it waits for, for the message when it does not come
    # @param every [Numeric] seconds between two polls
    # @yieldreturn [Object, nil] truthy once the server is ready
    # @return [Object] the block's last value
    # @raise [Failed] with the end of the log when the server exits or is not ready in time
    def start(timeout:, awaiting: "ready", every: 0.05, &ready)
      deadline = Clock.now + timeout
      @pid = Process.spawn(@env, *@argv, chdir: @chdir, pgroup: true, in: File::NULL, out: @log_path, err: [:child, :out])
      loop do
        raise Failed, "#{@name} exited during boot (#{@status.inspect})\n#{log_tail}" if reap(0)

        result = ready.call
        return result if result
        if Clock.now > deadline
          raise Failed, "#{@name}: no #{awaiting.respond_to?(:call) ? awaiting.call : awaiting} within #{timeout} s\n#{log_tail}"
        end

        sleep every
      end
    end

    # Graceful stop, then SIGKILL to whatever is left of the server's
    # processes. Never raises.
    # @param signal [String] the server's graceful stop signal
    # @param timeout [Numeric] seconds the leader has to exit
    # @return [Array<String>] what went wrong
    def stop(signal, timeout:)
      return [] unless @pid

      snapshot = Processes.of(@pid)
      problems = []
      begin
        Process.kill(signal, @pid) unless reap(0) # it may have died during boot
        problems << "did not exit #{timeout} s after SIG#{signal}" unless reap(timeout)
        left = leftovers(snapshot)
        problems << "processes #{left.join(", ")} still there after it exited" unless left.empty?
      rescue SystemCallError => e
        problems << "stop: #{e.message}"
      end
      kill(snapshot)
      problems
    end

    # @return [Boolean] true once the leader has exited and been reaped
    def reap(timeout)
      deadline = Clock.now + timeout
      loop do
        return true if @reaped
        return @reaped = true if (@status = Process.wait2(@pid, Process::WNOHANG)&.last)
        return false if Clock.now >= deadline

        sleep 0.02
      end
    rescue Errno::ECHILD
      @reaped = true
    end

    def log
      File.read(@log_path)
    rescue SystemCallError
      ""
    end

    def log_tail(lines = 15)
      File.readlines(@log_path).last(lines).join
    rescue SystemCallError
      ""
    end

    private

    # @return [Array<Integer>] pids of the snapshot still alive LEFTOVER_GRACE s after the leader exited
    def leftovers(snapshot)
      deadline = Clock.now + LEFTOVER_GRACE
      loop do
        left = Processes.alive(snapshot)
        return left if left.empty? || Clock.now >= deadline

        sleep 0.05
      end
    end

    # SIGKILL to what is left: the whole group while the leader is not
    # reaped (its pid, hence the group id, cannot have been reused), then
    # each process of the snapshot that is still the same process.
    def kill(snapshot)
      targets = (@reaped ? [] : [-@pid]) + Processes.alive(snapshot)
      targets.each do |target|
        Process.kill("KILL", target)
      rescue SystemCallError
        next
      end
      reap(2)
    end
  end
end
