# frozen_string_literal: true

require_relative "support"
require_relative "loads"

module PoolBench
  # Benchmark 3: CPU-bound speedup on 2 processes, items of equal cost.
  class Speedup
    ITEMS = 40
    ROUNDS = 400 # ~0.1 s per item: Loads.cpu(400)
    WORKERS = 2
    TARGET = 1.9

    def initialize(reps:)
      @reps = reps
    end

    def call
      items = Array.new(ITEMS, ROUNDS)
      work = ->(rounds) { Loads.cpu(rounds) }
      variants = [
        ["sequential", -> { items.map(&work) }],
        ["herd processes: 2", -> { Herd.map(items, processes: WORKERS, &work) }]
      ]
      variants << ["Parallel in_processes: 2", -> { Parallel.map(items, in_processes: WORKERS, &work) }] unless PoolBench.parallel_missing
      cpu = Hash.new { |hash, key| hash[key] = [] }
      timed = variants.map do |label, run|
        [label, -> { cpu[label] << children_cpu { raise "#{label} is wrong" unless run.call == items } }]
      end
      load_before = PoolBench.loadavg
      times = PoolBench.repeat(timed, @reps, "speedup")
      sequential = PoolBench.median(times["sequential"])
      rows = times.to_h do |label, values|
        stats = PoolBench.stats(values)
        [label, stats.merge(runs: values, speedup: sequential / stats[:median], cpu_seconds: PoolBench.median(cpu[label]))]
      end
      speedup = rows.dig("herd processes: 2", :speedup)
      met = speedup >= TARGET
      verdict = format("herd's speedup on %d processes: %.2fx. Target >= %.1fx: %s.", WORKERS, speedup, TARGET,
        met ? "met" : "NOT met")
      markdown = render(rows, verdict, load_before)
      puts markdown
      {markdown: markdown, data: {reps: @reps, items: ITEMS, item_work: "Loads.cpu(#{ROUNDS})", workers: WORKERS,
                                  target: TARGET, speedup: speedup, met: met, loadavg_before: load_before,
                                  loadavg_after: PoolBench.loadavg, rows: rows, skipped: PoolBench.parallel_missing}}
    end

    private

    # @return [Float] CPU seconds used by this process and its reaped children during the block
    def children_cpu
      before = Process.times
      yield
      after = Process.times
      %i[utime stime cutime cstime].sum { |field| after.send(field) - before.send(field) }
    end

    def render(rows, verdict, load_before)
      table = PoolBench.table(["variant", "s: median (min–max)", "x sequential", "CPU s (all processes)"],
        rows.map do |label, row|
          [label, PoolBench.seconds(row), format("%.2f", row[:speedup]), format("%.2f", row[:cpu_seconds])]
        end)
      <<~MD
        ## 3. CPU-bound speedup

        #{ITEMS} items of equal cost (`#{ROUNDS}.times { 1000.times { 2**3**4 } }`, ~#{format("%.2f", rows["sequential"][:median] / ITEMS)} s each),
        #{@reps} runs each, interleaved. Load average before: #{load_before}, after: #{PoolBench.loadavg}
        (other work on these #{Etc.nprocessors} cores shows up as wall time above CPU time / #{WORKERS}).

        #{table}
        #{verdict}#{"\n\nparallel gem skipped: #{PoolBench.parallel_missing}" if PoolBench.parallel_missing}
      MD
    end
  end
end
