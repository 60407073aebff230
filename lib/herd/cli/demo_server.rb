# frozen_string_literal: true

require_relative "command"
require "rbconfig"
require "socket"
require_relative "../clock"
require_relative "../memory"
require_relative "../heap/steps"

module Herd
  class CLI
    # `herd demo`: starts `herd serve` on a demo app whose requests fill
    # inline caches, warms it, shows the tree's memory with herd mem's table,
    # reforks (USR2), warms it again, and shows the memory once more.
    class DemoServer < Command
      BANNER = "Usage: herd demo [--workers N] [--requests N]   (herd demo fork: the copy-on-write demo)"
      APP = File.expand_path("../../../examples/demo/config.ru", __dir__)
      HERD = File.expand_path("../../../exe/herd", __dir__)

      def initialize(...)
        super
        @lines = Queue.new
      end

      private

      def call(options)
        start_server(options[:workers])
        warm(options[:requests], options[:workers])
        before = show("Generation 0: #{options[:workers]} workers forked from a mold that never served; " \
          "each warmed its own caches")
        refork(options[:workers])
        warm(options[:requests] / 2, options[:workers])
        after = show("Generation 1: the mold and workers forked from the warmest worker (herd refork / USR2)")
        @out.puts format("Σ PSS of the whole tree: %s before reforking, %s after (%.1fx less; %s).",
          Memory::Table.humanize(before.total.pss), Memory::Table.humanize(after.total.pss),
          before.total.pss.to_f / after.total.pss, Heap::Steps.ruby)
        @out.puts "Measure any server the same way: herd mem MONITOR_PID --tree"
        0
      ensure
        stop_server
      end

      def parse(argv)
        options = {workers: 4, requests: 200}
        parse_options(argv.dup, options) do |opts|
          opts.on("--workers N", Integer, "worker processes (default 4)") { |n| options[:workers] = n }
          opts.on("--requests N", Integer, "warm-up requests (default 200)") { |n| options[:requests] = n }
        end
        return options if options[:help]
        raise UsageError, "--workers must be between 1 and 16" unless (1..16).cover?(options[:workers])
        raise UsageError, "--requests must be at least 10" if options[:requests] < 10

        options
      end

      def start_server(workers)
        reader, writer = IO.pipe
        @pid = Process.spawn(RbConfig.ruby, "-I", File.expand_path("../..", __dir__), HERD, "serve", APP,
          "-w", workers.to_s, "-l", "127.0.0.1:0", err: writer, out: writer, pgroup: true)
        writer.close
        @follower = Thread.new { reader.each_line { |line| @lines << line } }
        @port = Integer(wait_for(/ready: \d+ workers serving http:\/\/127\.0\.0\.1:(\d+)/)[1])
        @out.puts "herd serve started (monitor pid #{@pid}, http://127.0.0.1:#{@port}) on #{Heap::Steps.ruby}, " \
          "demo app: #{APP}", ""
      end

      def warm(requests, concurrency)
        Array.new(concurrency) { Thread.new { (requests / concurrency).times { get } } }.each(&:join)
      end

      def get
        TCPSocket.open("127.0.0.1", @port) do |socket|
          socket.write("GET / HTTP/1.1\r\nHost: demo\r\n\r\n")
          socket.read
        end
      end

      # Each generation-1 worker replaces a generation-0 one that has exited:
      # once all are ready, the rollout is over.
      def refork(workers)
        Process.kill(:USR2, @pid)
        ready = []
        ready |= [Integer(wait_for(/worker (\d+) \(gen 1\), pid \d+ ready/)[1])] until ready.size == workers
      end

      def show(title)
        report = Memory.tree(@pid)
        @out.puts title, report.to_table, ""
        report
      end

      # @return [MatchData] from the server's log
      def wait_for(pattern, timeout: 60)
        deadline = Clock.now + timeout
        loop do
          remaining = deadline - Clock.now
          raise Error, "the demo server did not log #{pattern.source} in #{timeout}s" if remaining <= 0

          line = pop_with_deadline(remaining)
          match = line&.match(pattern)
          return match if match
        end
      end

      # Queue#pop(timeout:) is Ruby 3.2; this works on 3.1 too.
      def pop_with_deadline(seconds)
        deadline = Clock.now + seconds
        loop do
          return @lines.pop(true)
        rescue ThreadError
          return nil if Clock.now > deadline || !@follower.alive?

          sleep 0.01
        end
      end

      def stop_server
        return unless @pid

        Process.kill(:QUIT, @pid)
        Process.wait(@pid)
      rescue Errno::ESRCH, Errno::ECHILD
        nil
      end
    end
  end
end
