# frozen_string_literal: true

require_relative "support"
require_relative "../support/server_process"

module HttpBench
  # One of bench/http's servers running (Bench::ServerProcess) on a
  # rackup, ready once an HTTP request to its path gets a 200. bench/cow
  # starts its servers with it too.
  class ServerProcess
    BOOT_TIMEOUT = 60
    STOP_TIMEOUT = 20

    Failed = Bench::ServerProcess::Failed

    attr_reader :port, :boot_seconds, :probe, :log_path

    def initialize(server, app:, path:, log_path:)
      @server = server
      @app = app
      @path = path
      @log_path = log_path
    end

    # @raise [Failed] with the end of the log when it does not come up
    def start
      started = Bench::Clock.now
      @port = (@server.port == :zero) ? nil : Bench::HttpProbe.free_port
      env = {"RACK_ENV" => "production", "BENCH_PORT" => @port.to_s}
      @process = Bench::ServerProcess.new(@server.name, @server.argv.call(@app, @port), env: env, chdir: ROOT,
        log_path: @log_path)
      @process.start(timeout: BOOT_TIMEOUT, awaiting: -> { "HTTP 200 on #{@path} (#{@probe.inspect})" }) do
        @port ||= announced_port
        @probe = @port && Bench::HttpProbe.get(@port, @path)
        @probe && @probe[:status] == 200
      end
      @boot_seconds = Bench::Clock.now - started
      self
    end

    def pid = @process&.pid

    # @return [Process::Status, nil] the leader's, once reaped
    def status = @process&.status

    # Graceful stop, then SIGKILL to whatever is left of the server's
    # processes. Never raises; @return [Array<String>] what went wrong
    def stop
      @process ? @process.stop(@server.stop, timeout: STOP_TIMEOUT) : []
    end

    # @return [Boolean] exited with 0, or killed by its own stop signal (Puma does that)
    def clean_exit?
      return false unless status

      status.success? || status.termsig == Signal.list.fetch(@server.stop)
    end

    def cpu
      Bench::Processes.cpu_by_role(pid)
    end

    def url
      "http://#{HOST}:#{@port}#{@path}"
    end

    def log_tail(lines = 15)
      @process ? @process.log_tail(lines) : ""
    end

    private

    # herd binds port 0 and logs the port it got.
    def announced_port
      File.foreach(@log_path) do |line|
        match = @server.ready.match(line)
        return match[1].to_i if match
      end
      nil
    rescue SystemCallError
      nil
    end
  end
end
