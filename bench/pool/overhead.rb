# frozen_string_literal: true

require_relative "support"

module PoolBench
  # Benchmark 2: what a pool costs per item when the work costs nothing:
  # `{ |i| i }` over 100,000 integers. Nothing is subtracted: the times
  # include forking, heap preparation and reaping.
  class Overhead
    ITEMS = 100_000
    WORKERS = 2
    TARGET = 0.25 # herd's time per item at most a quarter of parallel's
    HERD = "herd processes: 2"
    PARALLEL = "Parallel in_processes: 2"

    def initialize(reps:)
      @reps = [reps, 5].max # short runs: take a few more
    end

    def call
      items = (0...ITEMS).to_a
      work = ->(i) { i }
      variants = [
        ["Array#map (no pool)", -> { items.map(&work) }],
        ["herd processes: 0 (inline)", -> { Herd.map(items, processes: 0, &work) }],
        ["herd processes: 0, chunk_size: #{ITEMS}", -> { Herd.map(items, processes: 0, chunk_size: ITEMS, &work) }],
        [HERD, -> { Herd.map(items, processes: WORKERS, &work) }],
        ["herd processes: 2, chunk_size: 1000", -> { Herd.map(items, processes: WORKERS, chunk_size: 1000, &work) }],
        ["herd threads: 2", -> { Herd.map(items, threads: WORKERS, &work) }]
      ]
      variants << [PARALLEL, -> { Parallel.map(items, in_processes: WORKERS, &work) }] unless PoolBench.parallel_missing
      variants.each { |label, run| raise "#{label} is wrong" unless run.call == items } # warm-up and check
      rows = PoolBench.repeat(variants, @reps, "overhead").transform_values do |values|
        stats = Bench::Stats.summary(values)
        stats.merge(runs: values, us_per_item: stats[:median] * 1e6 / ITEMS)
      end
      verdict = judge(rows)
      markdown = render(rows, verdict)
      puts markdown
      {markdown: markdown, data: {reps: @reps, items: ITEMS, workers: WORKERS, target_ratio: TARGET, rows: rows,
                                  skipped: PoolBench.parallel_missing, **verdict}}
    end

    private

    def judge(rows)
      return {met: nil, text: "No parallel figure, no verdict: #{PoolBench.parallel_missing}."} unless rows[PARALLEL]

      ratio = rows[HERD][:us_per_item] / rows[PARALLEL][:us_per_item]
      met = ratio <= TARGET
      text = format("herd spends %.2f us per item, the parallel gem %.2f: %.2f of it. Target <= %.2f: %s.",
        rows[HERD][:us_per_item], rows[PARALLEL][:us_per_item], ratio, TARGET, met ? "met" : "NOT met")
      {ratio: ratio, met: met, text: text}
    end

    def render(rows, verdict)
      table = PoolBench.table(["variant", "s: median (min–max)", "us per item"],
        rows.map { |label, row| [label, PoolBench.seconds(row), format("%.2f", row[:us_per_item])] })
      <<~MD
        ## 2. Per-item overhead

        `{ |i| i }` over #{ITEMS} integers (an Array), #{@reps} runs each, nothing subtracted (fork, heap
        preparation, reaping included). `processes: 0` runs the same batches inline in the caller: herd's own
        bookkeeping without any IPC.

        #{table}
        #{verdict[:text]}
      MD
    end
  end
end
