# frozen_string_literal: true

require "socket"
require "tmpdir"
require "herd/memory"

module Herd
  # Runs `exe/herd serve` for real in a tmpdir, follows its log, and cleans
  # up every process it started, whatever the test did.
  class ServerHarness
    READY = /monitor: ready: (\d+) workers serving (\S+)/
    DEFAULT_APP = <<~RUBY
      run ->(env) { [200, {"content-type" => "text/plain"}, ["pid=\#{Process.pid} path=\#{env["PATH_INFO"]}\\n"]] }
    RUBY

    # A worker that serves GET /unsafe is no longer fork safe.
    FORK_UNSAFE_APP = <<~RUBY
      run ->(env) {
        Herd.no_longer_fork_safe!("opened a gRPC channel") if env["PATH_INFO"] == "/unsafe"
        [200, {}, ["ok"]]
      }
    RUBY

    attr_reader :pid, :dir, :lines

    # @param app [String] config.ru source
    # @param config [String, nil] herd.rb source
    # @param args [Array<String>] more `herd serve` arguments
    # @param command [Array<String>] what runs exe/herd (a wrapper, for systemd's LISTEN_PID)
    # @param fds [Hash] descriptors to pass (e.g. {3 => socket})
    def initialize(app: DEFAULT_APP, config: nil, args: [], env: {}, command: [RbConfig.ruby], fds: {})
      @dir = Dir.mktmpdir("herd-serve")
      File.write(File.join(@dir, "config.ru"), app)
      arguments = ["serve", "config.ru", *args]
      # A listener given as a flag replaces the file's: with listeners of
      # its own, the file gets the test's one too (first, for #ready).
      if config&.match?(/^\s*listen\b/)
        config = "listen '127.0.0.1:0'\n#{config}"
      else
        arguments += ["-l", "127.0.0.1:0"]
      end
      if config
        File.write(File.join(@dir, "herd.rb"), config)
        arguments += ["-c", "herd.rb"]
      end
      @lines = []
      @lock = Mutex.new
      @changed = ConditionVariable.new
      reader, writer = IO.pipe
      # A wrapper command gets "ruby exe/herd ..." as its arguments to exec.
      herd = ((command.size > 1) ? [RbConfig.ruby] : []) + ["-I", File.join(Test::ROOT, "lib"), File.join(Test::ROOT, "exe", "herd")]
      @pid = Process.spawn(env, *command, *herd, *arguments, chdir: @dir, err: writer, out: writer, pgroup: true, **fds)
      writer.close
      @follower = Thread.new { follow(reader) }
    end

    # Blocks until a log line matches (searching lines already seen first).
    # @return [MatchData]
    def wait_for(pattern, timeout: 20, after: 0)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      @lock.synchronize do
        loop do
          @lines.each_with_index do |line, index|
            next if index < after

            match = line.match(pattern)
            return match if match
          end
          remaining = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          if remaining <= 0 || @eof
            raise Minitest::Assertion, "no log line matched #{pattern.inspect} #{@eof ? "before the log ended" : "in #{timeout}s"}; log:\n#{@lines.join}"
          end

          @changed.wait(@lock, remaining)
        end
      end
    end

    # @return [Integer] how many lines so far (for wait_for(after:))
    def mark
      @lock.synchronize { @lines.size }
    end

    # Waits for the "ready" line; returns the first listener's URL.
    def ready
      @url ||= wait_for(READY)[2].split(",").first
    end

    def port
      Integer(ready[/:(\d+)\z/, 1])
    end

    # A raw HTTP exchange on a fresh connection.
    # @return [String] the whole response
    def request(raw)
      socket = TCPSocket.new("127.0.0.1", port)
      socket.write(raw)
      socket.read
    ensure
      socket&.close
    end

    def get(path, headers = "")
      request("GET #{path} HTTP/1.1\r\nHost: localhost\r\n#{headers}\r\n")
    end

    # With FORK_UNSAFE_APP and one worker: makes it fork-unsafe, and waits
    # until the monitor knows.
    def make_worker_unsafe
      get("/unsafe")
      wait_for(/worker 0 \(gen 0\), pid \d+ is no longer fork safe \(opened a gRPC channel\)/)
    end

    # @return [Array<Integer>] pids of every descendant of the monitor
    def descendants
      Memory::ProcessTree.new.descendants(@pid)
    end

    def signal(name)
      Process.kill(name, @pid)
    end

    # Waits for the monitor to exit.
    # @return [Process::Status]
    def wait(timeout: 20)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      loop do
        _, status = Process.waitpid2(@pid, Process::WNOHANG)
        if status
          # Every line it wrote, read: the follower reaches EOF once no
          # process of the tree holds the pipe.
          @follower.join(5)
          return @status = status
        end
        raise Minitest::Assertion, "herd serve did not exit in #{timeout}s; log:\n#{@lines.join}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

        sleep 0.02
      end
    end

    # Kills whatever is left (the monitor's process group and its
    # descendants) and removes the tmpdir.
    def cleanup
      leftovers = @status ? [] : descendants
      unless @status
        Process.kill(:KILL, -@pid)
        Process.wait(@pid)
      end
      # Only what is still in our process group: a pid reused by someone
      # else since we listed it must not be signalled.
      leftovers.each do |pid|
        Process.kill(:KILL, pid) if Process.getpgid(pid) == @pid
      rescue Errno::ESRCH
        nil
      end
      @follower.join(5)
      FileUtils.rm_rf(@dir)
    rescue Errno::ESRCH, Errno::ECHILD
      FileUtils.rm_rf(@dir)
    end

    # @return [Boolean] alive and not a zombie
    def self.alive?(pid)
      File.read("/proc/#{pid}/stat").split(") ").last.split.first != "Z"
    rescue Errno::ENOENT, Errno::ESRCH
      false
    end

    private

    def follow(reader)
      reader.each_line do |line|
        @lock.synchronize do
          @lines << line
          @changed.broadcast
        end
      end
    ensure
      reader.close
      @lock.synchronize do
        @eof = true
        @changed.broadcast
      end
    end
  end

  # For a test class that runs one server per test: `serve` starts it and
  # waits until it is ready; teardown cleans it up.
  module ServerTest
    def teardown
      @server&.cleanup
      super
    end

    def serve(**options)
      @server = ServerHarness.new(**options)
      @server.ready
      @server
    end
  end
end
