# frozen_string_literal: true

module Herd
  module Server
    # One line per request, in a format log tools know (Common Log Format
    # plus the duration): 127.0.0.1 - - [21/Nov/2026:08:00:00 +0000] "GET /x HTTP/1.1" 200 12 0.0012
    # @api private
    class AccessLog
      # @param target [String, IO, nil] a path (opened for append in each worker), an IO, or nil
      # @return [AccessLog, nil]
      def self.open(target)
        return nil unless target

        io = target.respond_to?(:write) ? target : File.open(target, "a")
        io.sync = true
        new(io)
      end

      def initialize(io)
        @io = io
      end

      def close
        @io.close unless @io.closed? || [$stdout, $stderr].include?(@io)
      end

      def record(remote_addr, exchange)
        return unless exchange&.method

        time = Time.now.strftime("%d/%b/%Y:%H:%M:%S %z")
        @io.write(%(#{remote_addr || "-"} - - [#{time}] "#{exchange.method} #{exchange.target} HTTP/1.1" ) +
          "#{exchange.status || "-"} #{exchange.bytes_sent || "-"} #{format("%.4f", exchange.duration.to_f)}\n")
      rescue IOError, SystemCallError
        nil
      end
    end
  end
end
