# frozen_string_literal: true

require "optparse"
require_relative "../memory/process_tree"

module Herd
  class CLI
    # `herd refork PID`: asks a running server's monitor for a refork (USR2),
    # after checking that PID is a herd monitor.
    class Refork
      BANNER = "Usage: herd refork MONITOR_PID"

      def initialize(out: $stdout, err: $stderr)
        @out = out
        @err = err
      end

      # @return [Integer] exit status
      def run(argv)
        OptionParser.new { |opts| opts.banner = BANNER }.parse!(argv)
        raise UsageError, "refork: missing MONITOR_PID (herd refork MONITOR_PID)" if argv.empty?

        pid = Integer(argv.first, 10)
        title = Memory::ProcessTree.new.title(pid)
        raise NoSuchProcess, "no process with pid #{pid}" unless title
        raise Error, "pid #{pid} is #{title.inspect}, not a herd monitor (ps shows \"herd monitor\")" unless title.start_with?("herd monitor")

        Process.kill(:USR2, pid)
        @out.puts "asked herd monitor #{pid} to refork (its log shows the new generation)"
        0
      rescue ArgumentError
        raise UsageError, "refork: MONITOR_PID must be a number, got #{argv.first.inspect}"
      rescue OptionParser::ParseError => e
        raise UsageError, "refork: #{e.message}"
      rescue Errno::EPERM
        raise Error, "not allowed to signal pid #{pid}: run as the server's user"
      end
    end
  end
end
