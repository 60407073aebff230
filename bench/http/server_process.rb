# frozen_string_literal: true

require_relative "support"

module HttpBench
  # One running server: spawned in its own process group (so that workers,
  # molds and anything they fork can all be signalled at once), its output
  # in a log file, ready once an HTTP request gets a 200.
  class ServerProcess
    BOOT_TIMEOUT = 60
    STOP_TIMEOUT = 20

    class Failed < StandardError; end

    attr_reader :port, :pid, :boot_seconds, :probe, :log_path
    # @return [Process::Status, nil] the leader's, once reaped
    attr_reader :status

    def initialize(server, app:, path:, log_path:)
      @server = server
      @app = app
      @path = path
      @log_path = log_path
    end

    # @raise [Failed] with the end of the log when it does not come up
    def start
      started = HttpBench.now
      @port = (@server.port == :zero) ? nil : HttpBench.free_port
      env = {"RACK_ENV" => "production", "BENCH_PORT" => @port.to_s}
      @pid = Process.spawn(env, *@server.argv.call(@app, @port), chdir: ROOT, pgroup: true,
        in: File::NULL, out: @log_path, err: [:child, :out])
      wait_until_ready(started + BOOT_TIMEOUT)
      @boot_seconds = HttpBench.now - started
      self
    end

    # Graceful stop, then SIGKILL to whatever is left of the server's
    # processes. Never raises; @return [Array<String>] what went wrong
    def stop
      return [] unless @pid

      processes = HttpBench.processes(@pid)
      problems = []
      begin
        Process.kill(@server.stop, @pid) unless @reaped # it may have died during boot
        problems << "did not exit #{STOP_TIMEOUT} s after SIG#{@server.stop}" unless reap(STOP_TIMEOUT)
        left = leftovers(processes, 2)
        problems << "processes #{left.join(", ")} still there after it exited" unless left.empty?
      rescue SystemCallError => e
        problems << "stop: #{e.message}"
      end
      kill(processes)
      problems
    end

    # @return [Boolean] exited with 0, or killed by its own stop signal (Puma does that)
    def clean_exit?
      return false unless @status

      @status.success? || @status.termsig == Signal.list.fetch(@server.stop)
    end

    def cpu
      HttpBench.server_cpu(@pid)
    end

    def url
      "http://#{HOST}:#{@port}#{@path}"
    end

    def log_tail(lines = 15)
      File.readlines(@log_path).last(lines).join
    rescue SystemCallError
      ""
    end

    private

    def wait_until_ready(deadline)
      loop do
        raise Failed, "#{@server.name} exited during boot (#{@status.inspect})\n#{log_tail}" if reap(0)

        @port ||= announced_port
        @probe = @port && HttpBench.probe(@port, @path)
        return if @probe && @probe[:status] == 200
        raise Failed, "#{@server.name}: no HTTP 200 on #{@path} within #{BOOT_TIMEOUT} s (#{@probe.inspect})\n#{log_tail}" if HttpBench.now > deadline

        sleep 0.05
      end
    end

    def announced_port
      File.foreach(@log_path) do |line|
        match = @server.ready.match(line)
        return match[1].to_i if match
      end
      nil
    end

    # @return [Boolean] true once the leader has exited and been reaped
    def reap(timeout)
      deadline = HttpBench.now + timeout
      loop do
        return true if @reaped
        return @reaped = true if (@status = Process.wait2(@pid, Process::WNOHANG)&.last)
        return false if HttpBench.now >= deadline

        sleep 0.02
      end
    rescue Errno::ECHILD
      @reaped = true
    end

    # @return [Array<Integer>] pids of the server still alive after timeout
    def leftovers(processes, timeout)
      deadline = HttpBench.now + timeout
      loop do
        left = still_there(processes)
        return left if left.empty? || HttpBench.now >= deadline

        sleep 0.05
      end
    end

    # @return [Array<Integer>] the pids of processes that are still the same processes (pid and start time)
    def still_there(processes)
      processes.select { |process| HttpBench.stat("/proc/#{process[:pid]}/stat")&.fetch(:start) == process[:start] }
        .map { |process| process[:pid] }
    end

    # SIGKILL to what is left: the whole group while the leader is not
    # reaped (its pid, hence the group id, cannot have been reused), then each
    # process of the snapshot that is still the same process (pid and start
    # time): on a busy machine pids come round again quickly.
    def kill(processes)
      targets = (@reaped ? [] : [-@pid]) + still_there(processes)
      targets.each do |target|
        Process.kill("KILL", target)
      rescue SystemCallError
        next
      end
      reap(2)
    end
  end
end
