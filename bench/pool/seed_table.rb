# frozen_string_literal: true

require_relative "support"
require_relative "loads"
require_relative "http_server"

module PoolBench
  # Benchmark 1: the seed's table (sequential vs forking vs threading on a
  # CPU, a sleep and a download load), with herd and the parallel gem doing
  # the forking and threading.
  class SeedTable
    CPU_ITEMS = 8 # the seed ran 4 performs; 8 makes sequential take ~2 s here
    SLEEP_ITEMS = 8
    SLEEP_SECONDS = 0.25 # the seed slept 1 s four times
    DOWNLOADS = 24
    BODY_SIZE = 256 * 1024
    LATENCY = 0.05 # what the server waits per response, standing in for the network
    KINDS = [
      ["herd processes", ->(items, n, work) { Herd.map(items, processes: n, &work) }, nil],
      ["herd threads", ->(items, n, work) { Herd.map(items, threads: n, &work) }, nil],
      ["Parallel in_processes", ->(items, n, work) { Parallel.map(items, in_processes: n, &work) }, :parallel],
      ["Parallel in_threads", ->(items, n, work) { Parallel.map(items, in_threads: n, &work) }, :parallel]
    ].freeze

    def initialize(reps:)
      @reps = reps
    end

    # @return [Hash] :markdown, :data
    def call
      server = HttpServer.new(body_size: BODY_SIZE, latency: LATENCY).start
      loads = {
        "CPU" => load(Array.new(CPU_ITEMS, 1000), [2], ->(rounds) { Loads.cpu(rounds) }),
        "sleep" => load(Array.new(SLEEP_ITEMS, SLEEP_SECONDS), [2, 8], ->(seconds) { Loads.snooze(seconds) }),
        "I/O" => load(Array.new(DOWNLOADS, server.port), [2, 8], ->(port) { Loads.download(port) })
      }
      results = loads.to_h { |name, spec| [name, measure(name, spec)] }
      markdown = render(results)
      puts markdown
      {markdown: markdown, data: {reps: @reps, loads: describe, results: results}}
    ensure
      server&.stop
    end

    private

    def load(items, worker_counts, work)
      {items: items, worker_counts: worker_counts, work: work}
    end

    def measure(name, spec)
      items = spec[:items]
      work = spec[:work]
      expected = items.map(&work) # warm-up, and the answer every variant must give
      variants = [["sequential", -> { items.map(&work) }]]
      skipped = {}
      spec[:worker_counts].each do |n|
        KINDS.each do |kind, run, peer|
          label = "#{kind}: #{n}"
          next skipped[label] = PoolBench.parallel_missing if peer == :parallel && PoolBench.parallel_missing

          variants << [label, -> { check(label, run.call(items, n, work), expected) }]
        end
      end
      times = PoolBench.repeat(variants, @reps, name)
      sequential = Bench::Stats.median(times["sequential"])
      rows = times.to_h do |label, values|
        stats = Bench::Stats.summary(values)
        [label, stats.merge(runs: values, speedup: sequential / stats[:median])]
      end
      skipped.each { |label, reason| rows[label] = {skipped: reason} }
      rows
    end

    def check(label, result, expected)
      raise "#{label} returned #{result.inspect[0, 80]}, expected #{expected.inspect[0, 80]}" unless result == expected
    end

    def render(results)
      labels = results.values.flat_map(&:keys).uniq
      rows = labels.map do |label|
        [label, *results.values.map { |rows_of_load| cell(rows_of_load[label]) }]
      end
      <<~MD
        ## 1. The seed's table: sequential vs processes vs threads

        Seconds, median of #{@reps} (min–max), and the speedup over sequential. Loads:
        CPU = #{CPU_ITEMS} x the seed's `1000.times { 1000.times { 2**3**4 } }`; sleep = #{SLEEP_ITEMS} x
        `sleep #{SLEEP_SECONDS}`; I/O = #{DOWNLOADS} x `Net::HTTP.get` of a #{BODY_SIZE / 1024} KiB body from a local
        server (127.0.0.1, its own process) that waits #{(LATENCY * 1000).round} ms before each answer, standing in for
        the network. Workers: 2 (the cores), and 8 for the waiting loads. Every variant's result is checked
        against the sequential one.

        #{PoolBench.table(["variant", *results.keys.map { |load| "#{load}: s (x sequential)" }], rows)}#{skip_note}
      MD
    end

    def skip_note
      PoolBench.parallel_missing ? "\nparallel gem skipped: #{PoolBench.parallel_missing}\n" : ""
    end

    def cell(row)
      return "not run" unless row
      return "skipped (gem missing)" if row[:skipped]

      "#{Bench::Stats.range(row, "%.3f")}, #{format("%.2fx", row[:speedup])}"
    end

    def describe
      {
        cpu: {items: CPU_ITEMS, work: "1000.times { 1000.times { 2**3**4 } }"},
        sleep: {items: SLEEP_ITEMS, work: "sleep #{SLEEP_SECONDS}"},
        io: {items: DOWNLOADS, work: "Net::HTTP.get from 127.0.0.1", body_bytes: BODY_SIZE, server_latency: LATENCY}
      }
    end
  end
end
