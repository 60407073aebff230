# frozen_string_literal: true

require_relative "command"
require_relative "../memory/process_tree"

module Herd
  class CLI
    # `herd refork PID`: asks a running server's monitor for a refork (USR2),
    # after checking that PID is a herd monitor.
    class Refork < Command
      BANNER = "Usage: herd refork MONITOR_PID"

      private

      def parse(argv)
        options = {}
        rest = parse_options(argv, options, name: "refork") { nil }
        return options if options[:help]
        raise UsageError, "refork: missing MONITOR_PID (herd refork MONITOR_PID)" if rest.empty?
        raise UsageError, "refork: one MONITOR_PID only, got #{rest.join(" ")}" if rest.size > 1
        unless rest.first.match?(/\A[1-9]\d*\z/)
          raise UsageError, "refork: MONITOR_PID must be a number, got #{rest.first.inspect}"
        end

        {pid: Integer(rest.first, 10)}
      end

      def call(options)
        pid = options[:pid]
        title = Memory::ProcessTree.new.title(pid)
        raise NoSuchProcess, "no process with pid #{pid}" unless title
        unless title.start_with?("herd monitor")
          raise Error, "pid #{pid} is #{title.inspect}, not a herd monitor (ps shows \"herd monitor\")"
        end

        Process.kill(:USR2, pid)
        @out.puts "asked herd monitor #{pid} to refork (its log shows the new generation)"
        0
      rescue Errno::EPERM
        raise Error, "not allowed to signal pid #{pid}: run as the server's user"
      end
    end
  end
end
