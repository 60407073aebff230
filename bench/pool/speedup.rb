# frozen_string_literal: true

require_relative "support"
require_relative "loads"
require_relative "bare_forks"

module PoolBench
  # Benchmark 3: CPU-bound speedup on 2 processes, items of equal cost.
  class Speedup
    ITEMS = 40
    ROUNDS = 400 # ~0.1 s per item: Loads.cpu(400)
    WORKERS = 2
    TARGET = 1.97 # and never below the parallel gem's speedup in the same run
    HERD = "herd processes: 2"
    PARALLEL = "Parallel in_processes: 2"
    CEILING = "ceiling: 2 bare forks, items taken one by one"
    MIN_REPS = 5

    def initialize(reps:)
      @reps = [reps, MIN_REPS].max
    end

    def call
      items = Array.new(ITEMS, ROUNDS)
      # Each item is timed where it runs: what share of the workers' time
      # went to items is the pool's own doing, whatever speed the vCPUs had.
      work = lambda do |rounds|
        started = Bench::Clock.now
        Loads.cpu(rounds)
        [rounds, Bench::Clock.now - started]
      end
      variants = [
        ["sequential", -> { items.map(&work) }],
        [HERD, -> { Herd.map(items, processes: WORKERS, &work) }],
        [CEILING, -> { BareForks.map(items, workers: WORKERS, &work) }]
      ]
      variants << [PARALLEL, -> { Parallel.map(items, in_processes: WORKERS, &work) }] unless PoolBench.parallel_missing
      cpu = Hash.new { |hash, key| hash[key] = [] }
      item_seconds = Hash.new { |hash, key| hash[key] = [] }
      timed = variants.map do |label, run|
        [label, lambda do
          cpu[label] << children_cpu do
            results = run.call
            raise "#{label} is wrong" unless results.map(&:first) == items

            item_seconds[label] << results.sum(&:last)
          end
        end]
      end
      load_before = Bench::Report.loadavg
      per_cpu = BareForks.per_cpu_seconds(ROUNDS, items: 4)
      times = PoolBench.repeat(timed, @reps, "speedup")
      sequential = Bench::Stats.median(times["sequential"])
      rows = times.to_h do |label, values|
        stats = Bench::Stats.summary(values)
        busy = busy_shares(label, values, item_seconds[label])
        [label, stats.merge(runs: values, speedup: sequential / stats[:median], cpu_seconds: Bench::Stats.median(cpu[label]),
          busy: Bench::Stats.median(busy), busy_runs: busy)]
      end
      speedup = rows.dig(HERD, :speedup)
      parallel = rows.dig(PARALLEL, :speedup)
      met = speedup >= TARGET && (parallel.nil? || speedup >= parallel)
      verdict = format("herd's speedup on %d processes: %.2fx%s. Target >= %.2fx and >= the parallel gem's: %s.", WORKERS,
        speedup, parallel ? format(", the parallel gem's %.2fx", parallel) : "", TARGET, met ? "met" : "NOT met")
      verdict += paired(times) if parallel
      verdict += busy_verdict(rows)
      ceiling = rows.dig(CEILING, :speedup)
      verdict += format(" This machine's ceiling in the same run (bare forks): %.2fx; herd reaches %.0f%% of it.",
        ceiling, speedup / ceiling * 100)
      markdown = render(rows, verdict, load_before, per_cpu)
      puts markdown
      {markdown: markdown, data: {reps: @reps, items: ITEMS, item_work: "Loads.cpu(#{ROUNDS})", workers: WORKERS,
                                  target: TARGET, speedup: speedup, parallel_speedup: parallel, ceiling_speedup: ceiling, met: met,
                                  per_cpu_seconds: per_cpu, loadavg_before: load_before,
                                  loadavg_after: Bench::Report.loadavg, rows: rows, skipped: PoolBench.parallel_missing}}
    end

    private

    # Rounds run herd and the parallel gem back to back: their ratio within
    # a round drifts less with the machine's load than either median does.
    def paired(times)
      ratios = times[PARALLEL].zip(times[HERD]).map { |theirs, ours| theirs / ours }
      format(" Round by round, the parallel gem's time / herd's: median %.3f (%.3f–%.3f; above 1: herd faster).",
        Bench::Stats.median(ratios), ratios.min, ratios.max)
    end

    # @return [Array<Float>] per run, the items' time in their workers over
    #   the time the workers had (workers x the call's wall time)
    def busy_shares(label, walls, item_seconds)
      workers = (label == "sequential") ? 1 : WORKERS
      walls.zip(item_seconds).map { |wall, busy| busy / (workers * wall) }
    end

    # The speedup's wall times carry the vCPUs' drift (an item took 1.6x as
    # long on one vCPU as on the other in some runs, and either may be slow
    # within a minute); the busy share does not: it is the call's own cost.
    def busy_verdict(rows)
      shares = {HERD => "herd", PARALLEL => "the parallel gem", CEILING => "bare forks"}.filter_map do |label, name|
        rows[label] && [name, rows[label][:busy]]
      end
      text = format(" Share of the workers' time spent on items, which the vCPUs' speed does not move (the speedup at the " \
        "items' own speed is %d x that share; %.2fx is %.1f%%): %s.", WORKERS, TARGET, TARGET / WORKERS * 100,
        shares.map { |name, share| format("%s %.1f%%", name, share * 100) }.join(", "))
      ours = rows[HERD][:busy]
      theirs = rows[PARALLEL]&.dig(:busy)
      met = ours * WORKERS >= TARGET && (theirs.nil? || ours >= theirs)
      text += format(" At the items' own speed, herd %.2fx: %s.", ours * WORKERS, met ? "met" : "NOT met")
      return text unless theirs

      gaps = rows[HERD][:busy_runs].zip(rows[PARALLEL][:busy_runs]).map { |herd, gem| (herd - gem) * 100 }
      text + format(" Round by round, herd's share minus the parallel gem's: median %+.2f points (%+.2f to %+.2f).",
        Bench::Stats.median(gaps), gaps.min, gaps.max)
    end

    # @return [Float] CPU seconds used by this process and its reaped children during the block
    def children_cpu
      before = Process.times
      yield
      after = Process.times
      %i[utime stime cutime cstime].sum { |field| after.send(field) - before.send(field) }
    end

    def render(rows, verdict, load_before, per_cpu)
      table = PoolBench.table(["variant", "s: median (min–max)", "x sequential", "CPU s (all processes)", "workers busy"],
        rows.map do |label, row|
          [label, PoolBench.seconds(row), format("%.2f", row[:speedup]), format("%.2f", row[:cpu_seconds]),
            format("%.1f%%", row[:busy] * 100)]
        end)
      <<~MD
        ## 3. CPU-bound speedup

        #{ITEMS} items of equal cost (`#{ROUNDS}.times { 1000.times { 2**3**4 } }`, ~#{format("%.2f", rows["sequential"][:median] / ITEMS)} s each),
        #{@reps} runs each, interleaved. Load average before: #{load_before}, after: #{Bench::Report.loadavg}
        (other work on these #{Etc.nprocessors} cores shows up as wall time above CPU time / #{WORKERS}).
        #{PoolBench.per_cpu_line(per_cpu)}
        The ceiling row is the leanest fork pool there is (bench/pool/bare_forks.rb): what any pool can reach
        on this machine in this run. "Workers busy" adds up the items' time, each timed in its worker, over the
        time the workers had (#{WORKERS} x the call's wall time; 1 for sequential): the start, the round trips,
        the tail and the teardown are the rest.

        #{table}
        #{verdict}#{"\n\nparallel gem skipped: #{PoolBench.parallel_missing}" if PoolBench.parallel_missing}
      MD
    end
  end
end
