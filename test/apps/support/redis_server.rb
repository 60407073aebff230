# frozen_string_literal: true

require "open3"
require "tmpdir"
require "fileutils"
require "support/waiting"

module Herd
  # A redis-server of the test's own (Debian's, which test/apps/setup
  # installs), on a UNIX socket in a fresh directory: no port to collide
  # with another server on the machine, no data kept. Queried with
  # redis-cli, so the test needs no Redis gem in its own bundle.
  class RedisServer
    # @return [String] for REDIS_URL
    attr_reader :url
    # @return [String] its directory, removed by #stop
    attr_reader :dir

    # @raise [Minitest::Assertion] when redis-server is not installed
    def initialize
      %w[redis-server redis-cli].each do |command|
        next if system("command -v #{command} >/dev/null 2>&1")

        raise Minitest::Assertion, "#{command} is missing: run test/apps/setup (it installs Debian's redis-server)"
      end
      @dir = Dir.mktmpdir("herd-redis")
      @socket = File.join(@dir, "redis.sock")
      @url = "unix://#{@socket}"
      @pid = spawn("redis-server", "--port", "0", "--unixsocket", @socket, "--save", "", "--appendonly", "no",
        "--maxmemory-policy", "noeviction", "--dir", @dir, out: File.join(@dir, "redis.log"), err: [:child, :out],
        in: File::NULL, pgroup: true)
      Waiting.wait_until("redis-server answering on #{@socket}", timeout: 20) { File.socket?(@socket) && call("PING") == "PONG" }
    rescue Minitest::Assertion
      stop
      raise
    end

    # @return [String] redis-cli's raw answer, chomped (lines for a list)
    def call(*args)
      out, status = Open3.capture2e("redis-cli", "-s", @socket, "--raw", *args.map(&:to_s))
      status.success? ? out.chomp : nil
    end

    # @return [Array<String>]
    def list(*args)
      (call(*args) || "").lines(chomp: true).reject(&:empty?)
    end

    def stop
      if @pid
        Process.kill(:TERM, @pid)
        Process.wait(@pid)
      end
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    ensure
      @pid = nil
      FileUtils.rm_rf(@dir) if @dir
    end
  end
end
