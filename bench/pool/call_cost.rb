# frozen_string_literal: true

require "socket"
require_relative "support"
require_relative "loads"
require_relative "bare_forks"

module PoolBench
  # Benchmark 5: what one call costs, and whether a short job gains.
  #
  # - `Herd.map([1, 2], processes: 2) { _1 }`, with and without heap
  #   preparation, against the parallel gem and against a floor: two bare
  #   forks that each send one marshalled integer over a socketpair and
  #   exit, reaped by a blocking wait. The floor is what the machine charges
  #   for two processes (fork, copy-on-write faults, exit, scheduling);
  #   herd's cost above it is its own.
  # - A job of 64 CPU-bound items (~146 ms sequential on the issue's
  #   machine), sequential against 2 processes.
  #
  # Everything interleaved, many repetitions: on a shared machine the
  # absolute figures wander, the comparisons within one run do not.
  class CallCost
    CALLS = 40 # repetitions of the two-item call, per variant
    JOB_ITEMS = 64
    JOB_TARGET = 0.146 # seconds sequential, as in the issue
    WORKERS = 2
    TARGET_MS = 5.0
    FLOOR = "floor: 2 bare forks + socketpair + wait"
    HERD_BARE = "herd, prepare_heap: false"
    HERD = "herd (default: prepare_heap: true)"
    PARALLEL = "Parallel in_processes: 2"
    CEILING = "ceiling: 2 bare forks, items taken one by one"

    def initialize(reps:)
      @calls = [reps * 8, CALLS].max
      @job_reps = [reps * 3, 9].max
    end

    def call
      call_rows = measure_call
      job = measure_job
      markdown = render(call_rows, job)
      puts markdown
      {markdown: markdown, data: {calls: @calls, target_ms: TARGET_MS, call: call_rows, job: job}}
    end

    private

    def measure_call
      variants = [
        [FLOOR, -> { floor }],
        [HERD_BARE, -> { Herd.map([1, 2], processes: WORKERS, prepare_heap: false) { _1 } }],
        [HERD, -> { Herd.map([1, 2], processes: WORKERS) { _1 } }]
      ]
      variants << [PARALLEL, -> { Parallel.map([1, 2], in_processes: WORKERS) { _1 } }] unless PoolBench.parallel_missing
      variants.each { |label, run| 3.times { raise "#{label} is wrong" unless run.call == [1, 2] } } # warm-up and check
      times = PoolBench.repeat(variants, @calls, "call", quiet: true)
      floor = Bench::Stats.median(times[FLOOR])
      times.to_h do |label, values|
        stats = Bench::Stats.summary(values.map { |seconds| seconds * 1000 })
        [label, stats.merge(above_floor_ms: stats[:median] - floor * 1000)]
      end
    end

    def measure_job
      rounds = calibrate
      items = Array.new(JOB_ITEMS, rounds)
      work = ->(n) { Loads.cpu(n) }
      variants = [
        ["sequential", -> { items.map(&work) }],
        [HERD, -> { Herd.map(items, processes: WORKERS, &work) }],
        [HERD_BARE, -> { Herd.map(items, processes: WORKERS, prepare_heap: false, &work) }],
        [CEILING, -> { BareForks.map(items, workers: WORKERS, &work) }]
      ]
      variants << [PARALLEL, -> { Parallel.map(items, in_processes: WORKERS, &work) }] unless PoolBench.parallel_missing
      variants.each { |label, run| raise "#{label} is wrong" unless run.call == items }
      times = PoolBench.repeat(variants, @job_reps, "job")
      sequential = Bench::Stats.median(times["sequential"])
      rows = times.to_h do |label, values|
        stats = Bench::Stats.summary(values)
        [label, stats.merge(speedup: sequential / stats[:median])]
      end
      {rounds: rounds, items: JOB_ITEMS, reps: @job_reps, rows: rows, per_cpu_seconds: BareForks.per_cpu_seconds(rounds)}
    end

    # Loads.cpu rounds per item for a job of about JOB_TARGET seconds here.
    def calibrate
      probe = 40
      seconds = Array.new(5) { Bench::Clock.seconds { Loads.cpu(probe) } }.min
      [(JOB_TARGET / JOB_ITEMS / seconds * probe).round, 1].max
    end

    # Two children, as lean as fork gets in Ruby: the cost of the machine.
    def floor
      children = Array.new(WORKERS) do |number|
        ours, theirs = UNIXSocket.pair
        pid = fork do
          ours.close
          theirs.write(Marshal.dump(number + 1))
          exit!(0)
        end
        theirs.close
        [ours, pid]
      end
      children.map do |ours, pid|
        result = Marshal.load(ours.read) # standard:disable Security/MarshalLoad -- our own child
        Process.wait(pid)
        ours.close
        result
      end
    end

    def render(call_rows, job)
      call_table = PoolBench.table(["variant", "ms: median (min–max)", "ms above the floor (medians)"],
        call_rows.map do |label, row|
          [label, Bench::Stats.range(row, "%.1f"),
            (label == FLOOR) ? "–" : format("%+.1f", row[:above_floor_ms])]
        end)
      job_table = PoolBench.table(["variant", "s: median (min–max)", "x sequential"],
        job[:rows].map { |label, row| [label, PoolBench.seconds(row), format("%.2f", row[:speedup])] })
      bare = call_rows[HERD_BARE][:median]
      <<~MD
        ## 5. What one call costs

        `Herd.map([1, 2], processes: 2) { _1 }`, #{@calls} calls per variant, interleaved. The floor forks two
        bare children that each send one marshalled integer over a socketpair and exit, reaped with a blocking
        `Process.wait`: what this machine charges for two processes, whoever forks them.

        #{call_table}
        herd without heap preparation: #{format("%.1f", bare)} ms median. Target < #{TARGET_MS} ms: #{(bare < TARGET_MS) ? "met" : "NOT met"}
        (the floor itself: #{format("%.1f", call_rows[FLOOR][:median])} ms in this run).

        A job of #{job[:items]} CPU-bound items (`Loads.cpu(#{job[:rounds]})` each, calibrated to ~#{(JOB_TARGET * 1000).round} ms
        sequential), #{job[:reps]} runs each, interleaved. #{PoolBench.per_cpu_line(job[:per_cpu_seconds])}

        #{job_table}
      MD
    end
  end
end
