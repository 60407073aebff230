# frozen_string_literal: true

require "socket"
require "tmpdir"
require "fileutils"

module Herd
  # `herd serve` as a service manager runs it: stdout and stderr are files,
  # not a pipe somebody drains (Ruby buffers stdout then), the monitor's pid
  # is in a pidfile. Every process it started is killed in #cleanup.
  class FileLoggedServer
    attr_reader :dir, :pid

    # @param app [String] config.ru
    # @param config [String] herd.rb (`-c herd.rb`); the listener is added
    # @param redirect [Boolean] stdout/stderr redirected by the spawner (a
    #   shell's `>> file`) rather than by stdout_path/stderr_path
    def initialize(app:, config: "", redirect: true)
      @dir = Dir.mktmpdir("herd-files")
      File.write(path("config.ru"), app)
      File.write(path("herd.rb"), "#{config}\npidfile 'herd.pid'\n")
      herd = [RbConfig.ruby, "-I", File.join(Test::ROOT, "lib"), File.join(Test::ROOT, "exe", "herd")]
      files = redirect ? {out: [path("app.log"), "a"], err: [path("herd.log"), "a"]} : {out: File::NULL, err: File::NULL}
      @pid = Process.spawn(*herd, "serve", "config.ru", "-c", "herd.rb", "-l", "127.0.0.1:0", chdir: @dir,
        pgroup: true, in: File::NULL, **files)
    end

    def path(name)
      File.join(@dir, name)
    end

    # Waits until `file` has a line matching `pattern`.
    # @return [MatchData]
    def wait_for(pattern, file: "herd.log", timeout: 20)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      loop do
        text = File.exist?(path(file)) ? File.read(path(file)) : ""
        match = text.match(pattern)
        return match if match
        if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
          raise Minitest::Assertion, "no line matched #{pattern.inspect} in #{file} in #{timeout}s:\n#{text}"
        end

        sleep 0.02
      end
    end

    def port
      @port ||= Integer(wait_for(%r{listening on http://127\.0\.0\.1:(\d+)})[1])
    end

    def ready(workers)
      wait_for(/monitor: ready: #{workers} workers/)
      port
    end

    # @return [String] the response body
    def get(target)
      socket = TCPSocket.new("127.0.0.1", port)
      socket.write("GET #{target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
      response = socket.read
      raise Minitest::Assertion, "not a 200: #{response.inspect}" unless response.start_with?("HTTP/1.1 200")

      response.split("\r\n\r\n", 2).last
    ensure
      socket&.close
    end

    # The monitor's pid, read from the pidfile the server wrote.
    def pidfile_pid
      Integer(File.read(path("herd.pid")))
    end

    def signal(name, pid = pidfile_pid)
      Process.kill(name, pid)
    end

    # @return [Process::Status]
    def wait(timeout: 20)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      loop do
        _, status = Process.waitpid2(@pid, Process::WNOHANG)
        return @status = status if status
        raise Minitest::Assertion, "herd serve did not exit in #{timeout}s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

        sleep 0.02
      end
    end

    # @return [Array<Integer>] pids of every process left in our process group
    def group
      Dir.glob("/proc/[0-9]*/stat").filter_map do |stat|
        fields = File.read(stat).split(") ").last.split
        Integer(File.basename(File.dirname(stat))) if Integer(fields[2]) == @pid && fields[0] != "Z"
      rescue Errno::ENOENT, Errno::ESRCH
        nil
      end
    end

    def cleanup
      unless @status
        Process.kill(:KILL, -@pid)
        Process.wait(@pid)
      end
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    ensure
      group.each do |pid|
        Process.kill(:KILL, pid)
      rescue Errno::ESRCH
        nil
      end
      FileUtils.rm_rf(@dir)
    end
  end
end
