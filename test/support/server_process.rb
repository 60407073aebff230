# frozen_string_literal: true

require "fileutils"
require "socket"
require "herd/clock"
require "herd/memory"
require "support/file_log"
require "support/piped_log"
require "support/procfs"
require "support/waiting"

module Herd
  # The integration tests' one server launcher: spawns a server command in
  # a process group of its own, follows its log, waits for it to be ready,
  # sends it requests and signals, and in #cleanup kills and reaps every
  # process it started, whatever the test did. ServerHarness runs `herd
  # serve` with it; AppServer and FaultRunner hold one; rackup_test and
  # nginx_test run their servers with it.
  class ServerProcess
    READY = /monitor: ready: (\d+) workers serving (\S+)/

    # @return [Integer] the spawned process (the monitor, or what runs it)
    attr_reader :pid
    # @return [String] where it runs
    attr_reader :dir

    # @param command [Array<String>] what to run
    # @param dir [String] where to run it (its config, its log files)
    # @param env [Hash] more environment (nil values unset a variable)
    # @param logs [Hash, nil] nil: stdout and stderr share a pipe, read line
    #   by line; `{out: "app.log", err: "herd.log"}`: files in `dir`, herd's
    #   log the `err` one
    # @param redirect [Boolean] with `logs`: the spawn writes the files (a
    #   shell's `>> file`); false: the server opens them itself
    #   (stdout_path), its own stdout and stderr going to /dev/null
    # @param fds [Hash] descriptors to pass, e.g. `{3 => socket}`
    # @param pgroup [Boolean] a process group of its own, killed whole in
    #   #cleanup; false: the caller's, when the caller kills its own group
    # @param unsetenv_others [Boolean] only `env` as the environment
    # @param timeout [Numeric] seconds any wait of this object takes at most, unless told otherwise
    def initialize(command, dir:, env: {}, logs: nil, redirect: true, fds: {}, pgroup: true, unsetenv_others: false, timeout: 20)
      @dir = dir
      @timeout = timeout
      @pgroup = pgroup
      @logs = logs
      options = {chdir: dir, in: File::NULL, unsetenv_others: unsetenv_others, **fds}
      options[:pgroup] = true if pgroup
      if logs
        spawn_logging_to_files(command, env, options, redirect)
      else
        spawn_logging_to_a_pipe(command, env, options)
      end
    end

    # @return [String] the path of `name` in the server's directory
    def path(name)
      File.join(@dir, name)
    end

    # @return [Array<String>] herd's log so far (with a pipe, stdout's lines too)
    def lines
      @log.lines
    end

    # @return [Array<String>] what the server wrote on stdout, with `logs:` only
    def stdout_lines
      File.exist?(path(@logs.fetch(:out))) ? File.readlines(path(@logs.fetch(:out))) : []
    end

    # @return [Integer] how many log lines so far (for wait_for(after:))
    def mark
      @log.mark
    end

    # Blocks until a log line matches, searching the lines already there first.
    # @param after [Integer] ignore the first `after` lines (a {#mark})
    # @return [MatchData]
    # @raise [Minitest::Assertion] when the log ends or `timeout` passes first
    def wait_for(pattern, timeout: @timeout, after: 0)
      @log.wait_for(pattern, timeout: timeout, after: after)
    end

    # Waits for the monitor's "ready" line.
    # @return [String] the first listener's URL
    def ready
      @url ||= wait_for(READY)[2].split(",").first
    end

    # @return [Integer] the first listener's port, once ready
    def port
      Integer(ready[/:(\d+)\z/, 1])
    end

    # A raw HTTP exchange on a fresh connection to {#port}.
    # @param raw [String] the whole request
    # @return [String] the whole response, up to the server's close
    def request(raw)
      socket = TCPSocket.new("127.0.0.1", port)
      socket.write(raw)
      socket.read
    ensure
      socket&.close
    end

    # @param headers [String] more header lines, each ending in CRLF
    # @return [String] the whole response
    def get(path, headers = "")
      request("GET #{path} HTTP/1.1\r\nHost: localhost\r\n#{headers}\r\n")
    end

    # @return [String] the body of a GET that must answer 200
    # @raise [Minitest::Assertion] on another answer (or none)
    def body(path)
      response = get(path)
      raise Minitest::Assertion, "GET #{path}: not a 200: #{response.inspect}" unless response.start_with?("HTTP/1.1 200")

      response.split("\r\n\r\n", 2).last
    end

    # @param pid [Integer] the monitor, or one of its children
    def signal(name, pid = @pid)
      Process.kill(name, pid)
    end

    # Reaps the spawned process if it has exited, without blocking.
    # @return [Process::Status, nil] its status, nil while it runs
    def exited
      return @status if @status

      _, @status = Process.waitpid2(@pid, Process::WNOHANG)
      @status
    rescue Errno::ECHILD
      @status = :reaped # by someone else: a subreaper's own reaping loop
    end

    # Waits for the spawned process to exit, then (for up to 5 s) until every
    # line its tree wrote is read.
    # @param log [Boolean] false: not for the lines, when its children may outlive it
    # @return [Process::Status]
    # @raise [Minitest::Assertion] when it runs past `timeout`
    def wait(timeout: @timeout, log: true)
      status = Waiting.wait_until("#{@pid} exiting", timeout: timeout, interval: 0.005, detail: -> { "log:\n#{lines.join}" }) { exited }
      @log.finish if log
      status
    end

    # Sends `signal` (unless it has exited) and waits for the exit.
    # @return [Process::Status]
    def stop(signal = :QUIT, timeout: @timeout)
      signal(signal) unless exited
      wait(timeout: timeout)
    end

    # @return [Array<Integer>] pids of every descendant of the spawned process
    def descendants
      Memory::ProcessTree.new.descendants(@pid)
    end

    # Waits (up to `timeout`) for the spawned process's group to empty.
    # @return [Array<Integer>] what is still in it then, zombies included
    #   (every herd process is in the group; herd's monitor reaps its children)
    def processes_left(timeout: 5)
      left = nil
      Waiting.poll(timeout: timeout, interval: 0.05) { (left = Procfs.group(@pid, zombies: true)).empty? }
      left
    end

    # Whatever the test did: the stop signal and up to `grace` seconds to
    # exit, if asked, then SIGKILL to the process group, the spawned process
    # reaped, and every process left of the group killed, for up to
    # `timeout` seconds. Removes nothing: `dir` belongs to who made it.
    # @param grace [Numeric, nil] seconds to stop gracefully first
    # @param signal [Symbol] what stops it gracefully
    # @raise [Minitest::Assertion] when processes are still alive after `timeout`
    def cleanup(grace: nil, signal: :QUIT, timeout: 10)
      stop(signal, timeout: grace) if grace && !exited
    rescue Minitest::Assertion, Errno::ESRCH
      nil # killed below
    ensure
      kill_everything(timeout)
    end

    private

    def spawn_logging_to_a_pipe(command, env, options)
      reader, writer = IO.pipe
      @pid = Process.spawn(env, *command, out: writer, err: writer, **options)
      writer.close
      @log = PipedLog.new(reader)
    end

    def spawn_logging_to_files(command, env, options, redirect)
      files = if redirect
        {out: [path(@logs.fetch(:out)), "a"], err: [path(@logs.fetch(:err)), "a"]}
      else
        {out: File::NULL, err: File::NULL}
      end
      @pid = Process.spawn(env, *command, **files, **options)
      @log = FileLog.new(path(@logs.fetch(:err)), ended: -> { !exited.nil? })
    end

    def kill_everything(timeout)
      # Without a group, listed while the tree is whole: once the spawned
      # process is gone, its orphans are nobody's descendants.
      leftovers = (@pgroup || exited) ? [] : descendants
      kill(:KILL, @pgroup ? -@pid : @pid) unless exited
      Waiting.wait_until("#{@pid} reaped after SIGKILL", timeout: timeout) { exited }
      Waiting.wait_until("every process of #{@pid} gone after SIGKILL", timeout: timeout, detail: -> { left(leftovers).inspect }) do
        left(leftovers).each { |pid| kill(:KILL, pid) }.empty?
      end
      @log.finish
    end

    # Only processes still in the group (a pid reused by someone else since
    # it was listed must not be signalled); without a group of its own, its
    # descendants as listed.
    def left(leftovers)
      return Procfs.group(@pid) if @pgroup

      leftovers.select { |pid| Procfs.alive?(pid) }
    end

    def kill(signal, pid)
      Process.kill(signal, pid)
    rescue Errno::ESRCH
      nil
    end
  end
end
