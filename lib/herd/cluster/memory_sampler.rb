# frozen_string_literal: true

require_relative "../clock"
require_relative "../memory"

module Herd
  module Cluster
    # Measures the server's process tree (PSS, USS, shared, from
    # smaps_rollup) every `interval` seconds in a thread of the monitor, and
    # keeps the latest report.
    #
    # Why a thread: smaps_rollup walks the page tables of a process in the
    # kernel; for a tree of Rails workers one pass costs milliseconds, and
    # the monitor's loop times requests out and replaces dead workers. The
    # reads are system calls, which run without the GVL, so the loop goes on
    # meanwhile; it only ever reads {#latest}, one frozen report.
    # @api private
    class MemorySampler
      DEFAULT_INTERVAL = 1.0

      # @return [Memory::Report, nil] the newest complete measurement
      attr_reader :latest

      # @param root [Integer] the monitor's pid
      # @param interval [Float] seconds between two measurements
      # @param log [#call, nil] told (once) why a measurement failed
      def initialize(root, interval: DEFAULT_INTERVAL, log: nil)
        @root = root
        @interval = interval
        @log = log
        @latest = nil
        @thread = nil
      end

      # @return [self]
      def start
        @thread ||= Thread.new do
          Thread.current.name = "herd memory sampler"
          Thread.current.report_on_exception = false
          run
        end
        self
      end

      def stop
        @thread&.kill
        @thread&.join(1)
        @thread = nil
      end

      # Measures now, in the caller's thread (tests, and the first sample).
      # @return [Memory::Report, nil]
      def measure
        @latest = Memory.tree(@root)
      rescue Herd::Error => e
        unless @warned
          @warned = true
          @log&.call("memory telemetry unavailable: #{e.message}")
        end
        nil
      end

      # @param pid [Integer]
      # @return [Memory::Sample, nil] the latest sample of `pid`
      def sample(pid)
        @latest&.rows&.find { |row| row.pid == pid }&.sample
      end

      private

      def run
        loop do
          started = Clock.now
          measure
          sleep [@interval - (Clock.now - started), @interval / 4].max
        end
      end
    end
  end
end
