# frozen_string_literal: true

require "json"
require "open3"
require_relative "support"

module HttpBench
  # The load generator: wrk at a fixed concurrency, its exact percentiles
  # read from the JSON line printed by report.lua.
  class Wrk
    INSTALL_HINT = "wrk is not installed: `apt-get update && apt-get install -y wrk` (Debian/Ubuntu), " \
      "`brew install wrk` (macOS), or build it from https://github.com/wg/wrk"
    SCRIPT = File.join(__dir__, "report.lua")

    # @return [String, nil] e.g. "debian/4.1.0-3+b2", nil when wrk is missing
    def self.version
      output, = Open3.capture2e("wrk", "-v")
      output[/wrk (\S+)/, 1] || output.lines.first.to_s.strip
    rescue SystemCallError
      nil
    end

    def initialize(threads:, connections:, duration:)
      @threads = threads
      @connections = connections
      @duration = duration
    end

    # The command line, for the report (URL as a placeholder).
    def command(url = "URL", duration: @duration)
      ["wrk", "-t#{@threads}", "-c#{@connections}", "-d#{duration}s", "--latency",
        "-s", Bench::Report.relative(SCRIPT), url]
    end

    # A short run whose numbers are thrown away.
    def warm(url, seconds)
      Open3.capture2e(*command(url, duration: seconds), chdir: ROOT)
    end

    # @return [Hash] :rps, :latency_us, :errors, :requests, :bytes, :wrk_cpu, :output
    def run(url)
      cpu_before = children_cpu
      output, status = Open3.capture2e(*command(url), chdir: ROOT)
      line = output[/^BENCH_JSON (.*)$/, 1]
      raise "wrk failed (#{status.inspect}):\n#{output}" unless status.success? && line

      data = JSON.parse(line, symbolize_names: true)
      data.merge(rps: data[:requests] / (data[:duration_us] / 1e6),
        wrk_cpu: children_cpu - cpu_before, output: output.sub(/^BENCH_JSON.*\n?/, ""))
    end

    private

    # @return [Float] CPU seconds of waited-for children of this process (wrk)
    def children_cpu
      times = Process.times
      times.cutime + times.cstime
    end
  end
end
