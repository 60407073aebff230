# frozen_string_literal: true

require "open3"
require_relative "../support/clock"

module JobsBench
  # A redis-server of the benchmark's own (Debian's, which test/apps/setup
  # installs) on a UNIX socket in the scratch directory, nothing saved;
  # emptied before each Sidekiq run. Its memory is not in any setup's Σ PSS
  # (it is the same for all of them, outside their trees).
  class Redis
    attr_reader :url

    def self.missing
      %w[redis-server redis-cli].find { |command| !system("command -v #{command} >/dev/null 2>&1") }
    end

    def initialize(dir)
      @dir = dir
      @socket = File.join(dir, "redis.sock")
      @url = "unix://#{@socket}"
    end

    def start
      @pid = Process.spawn("redis-server", "--port", "0", "--unixsocket", @socket, "--save", "", "--appendonly", "no",
        "--dir", @dir, out: File.join(@dir, "redis.log"), err: [:child, :out], in: File::NULL, pgroup: true)
      deadline = Bench::Clock.now + 20
      until File.socket?(@socket) && call("PING") == "PONG"
        raise "redis-server did not answer on #{@socket}" if Bench::Clock.now > deadline

        sleep 0.05
      end
      self
    end

    # @return [String, nil] redis-cli's raw answer
    def call(*args)
      out, status = Open3.capture2e("redis-cli", "-s", @socket, "--raw", *args.map(&:to_s))
      status.success? ? out.chomp : nil
    end

    def version
      call("INFO", "server").to_s[/redis_version:(\S+)/, 1]
    end

    def stop
      return unless @pid

      Process.kill("TERM", @pid)
      Process.wait(@pid)
    rescue SystemCallError
      nil
    ensure
      @pid = nil
    end
  end
end
