# frozen_string_literal: true

require_relative "support"
require_relative "loads"
require_relative "call_cost"

module PoolBench
  # Benchmark 6: where the workers wait. The 64-item job of benchmark 5, each
  # item timed in its worker, so what a pool costs is read off the items
  # themselves rather than off a wall time that this VM's drifting vCPUs move
  # by ±25% from one round to the next: the idle time between two items of
  # a worker (the round trip through the parent), the wait for the first
  # item and after the last, and the tail (one worker done, the other busy).
  class IdleGaps
    WORKERS = 2
    HERD = "herd processes: 2"
    HERD_NO_PREFETCH = "herd, HERD_POOL_PREFETCH=0"
    PARALLEL = "Parallel in_processes: 2"
    MIN_REPS = 15

    def initialize(reps:)
      @reps = [reps * 5, MIN_REPS].max
    end

    def call
      rounds = CallCost.new(reps: 1).send(:calibrate)
      items = Array.new(CallCost::JOB_ITEMS, rounds)
      job = lambda do |n|
        started = Bench::Clock.now
        Loads.cpu(n)
        [Process.pid, started, Bench::Clock.now]
      end
      variants = [
        [HERD, -> { Herd.map(items, processes: WORKERS, &job) }],
        [HERD_NO_PREFETCH, -> { without_prefetch { Herd.map(items, processes: WORKERS, &job) } }]
      ]
      variants << [PARALLEL, -> { Parallel.map(items, in_processes: WORKERS, &job) }] unless PoolBench.parallel_missing
      samples = Hash.new { |hash, key| hash[key] = [] }
      timed = variants.map do |label, run|
        [label, lambda do
          called = Bench::Clock.now
          rows = run.call
          samples[label] << breakdown(rows, called, Bench::Clock.now)
        end]
      end
      PoolBench.repeat(timed, @reps, "gaps", quiet: true)
      rows = samples.to_h do |label, values|
        [label, %i[wall idle first last tail].to_h { |key| [key, Bench::Stats.median(values.map { |value| value[key] })] }]
      end
      markdown = render(rows, rounds)
      puts markdown
      {markdown: markdown, data: {reps: @reps, items: items.size, item_work: "Loads.cpu(#{rounds})", rows: rows, samples: samples}}
    end

    private

    def without_prefetch
      saved = ENV[Herd::Pool::Run::PREFETCH_ENV]
      ENV[Herd::Pool::Run::PREFETCH_ENV] = "0"
      yield
    ensure
      ENV[Herd::Pool::Run::PREFETCH_ENV] = saved
    end

    # @return [Hash] milliseconds
    def breakdown(rows, called, returned)
      by_worker = rows.group_by(&:first).values.map { |items| items.sort_by { |row| row[1] } }
      idle = by_worker.sum { |items| items.each_cons(2).sum { |before, after| after[1] - before[2] } }
      ends = by_worker.map { |items| items.last[2] }
      {wall: returned - called, idle: idle, first: rows.map { |row| row[1] }.min - called,
       last: returned - ends.max, tail: ends.max - ends.min}.transform_values { |seconds| seconds * 1000 }
    end

    def render(rows, rounds)
      table = PoolBench.table(["variant", "wall ms", "idle between items, ms (both workers)", "to the first item", "after the last", "tail"],
        rows.map do |label, row|
          [label, format("%.1f", row[:wall]), format("%.2f", row[:idle]), format("%.2f", row[:first]),
            format("%.2f", row[:last]), format("%.2f", row[:tail])]
        end)
      <<~MD
        ## 6. Where the workers wait

        The #{CallCost::JOB_ITEMS}-item job of section 5 (`Loads.cpu(#{rounds})` each), #{@reps} runs per variant,
        interleaved; each item timed in its worker. Medians, in ms. "Idle between items" adds up, over both
        workers, the time from the end of one item to the start of the worker's next: the round trip
        through the parent, unless the next batch was already waiting in the worker's socket
        (herd sends a busy worker its next batch ahead; HERD_POOL_PREFETCH=0 turns that off).

        #{table}
      MD
    end
  end
end
