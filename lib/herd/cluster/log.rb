# frozen_string_literal: true

module Herd
  module Cluster
    # One line per lifecycle event, on stderr by default:
    #   2026-11-21T08:00:00.123Z herd[1234] monitor: worker 0 (gen 0) spawned as pid 1240
    # @api private
    class Log
      def initialize(io = $stderr)
        @io = io
        @io.sync = true if @io.respond_to?(:sync=)
        @lock = Mutex.new
      end

      # @param role [String] "monitor", "mold (gen 0)", "worker 2 (gen 0)"
      def info(role, message)
        write(role, message)
      end

      # Logs an exception with its backtrace (hooks, app boot failures).
      def error(role, message, exception = nil)
        write(role, exception ? "#{message}: #{exception.class}: #{exception.message}" : message)
        Array(exception&.backtrace).first(30).each { |line| write(role, "    #{line}") }
      end

      private

      # strftime rather than Time#iso8601: the monitor does not load the
      # "time" and "date" libraries, which an app may want at other versions.
      TIMESTAMP = "%Y-%m-%dT%H:%M:%S.%LZ"

      def write(role, message)
        line = "#{Time.now.utc.strftime(TIMESTAMP)} herd[#{Process.pid}] #{role}: #{message}\n"
        @lock.synchronize { @io.write(line) }
      rescue IOError, SystemCallError
        nil # a closed log must not take a process down
      end
    end
  end
end
