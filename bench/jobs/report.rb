# frozen_string_literal: true

require_relative "setups"
require_relative "../support/report"
require_relative "../support/stats"

module JobsBench
  # bench/results/NAME.md: the environment, a table per job system, the
  # targets of issue 36 against what was measured.
  class Report
    SYSTEMS = {"sidekiq" => "Sidekiq", "solid_queue" => "Solid Queue"}.freeze

    def initialize(env:, runs:, options:)
      @env = env
      @runs = runs
      @options = options
      @good = runs.reject { |run| run[:error] }
    end

    def markdown
      <<~MD
        # bench/jobs: job workers on the Rails 8 app, Σ PSS and jobs/s

        #{Bench::Report.environment_markdown(@env)}- app: `#{@env[:app]}` (the Rails 8.1 app `rails new` makes, with the scaffold `Thing`), `RAILS_ENV=production`, copied afresh for every run with bench/jobs/overlay over it
        - booted app: `#{@env[:server_ruby]}`, YJIT #{Bench::Report.yjit_text(@env[:yjit], @env[:yjit_env])}; #{(@env[:versions] || {}).map { |name, version| "#{name} #{version}" }.join(", ")}; Redis #{@env[:redis] || "not used"}
        - load average at start #{@env[:loadavg_start]}, at end #{@env[:loadavg_end]}; #{@env[:seconds]} s in all
        - #{outside_load}
        - #{@options[:reps]} repetitions, the setups interleaved (their order rotating each repetition); mixed batch #{@options[:jobs]} jobs, CPU batch #{@options[:cpu_jobs]} jobs; Σ PSS sampled every #{@options[:interval]} s

        Figures are medians over the repetitions with (min–max). Σ PSS is of every process of the setup
        (herd: monitor, mold, workers; `bin/jobs`: supervisor, workers, dispatcher, scheduler; separate
        `sidekiq`s: all of them), averaged over time from the mixed batch's enqueue to the CPU batch's end
        (the enqueuing `bin/rails runner` and redis-server are outside every setup). jobs/s: a batch
        enqueued at once (`ActiveJob.perform_all_later`), from just before the enqueue to the end of its
        last job. The mixed batch is 40 % DatabaseJob, 40 % RenderJob, 20 % CpuJob (bench/jobs/overlay/app/jobs).

        #{setups_list}#{ksm_note}
        #{SYSTEMS.map { |system, title| system_table(system, title) }.join("\n")}
        ## Targets (issue 36)

        #{targets_table}
        #{errors_section}
      MD
    end

    # The figures per setup, for the JSON.
    def summary
      JobsBench::SETUPS.map(&:name).filter_map do |name|
        mine = @good.select { |run| run[:setup] == name }
        next if mine.empty?

        [name, {rest_pss: stat(mine) { |run| run[:rest_pss] }, pss_avg: stat(mine) { |run| run.dig(:memory, :average) },
                pss_peak: stat(mine) { |run| run.dig(:memory, :peak) }, pss_end: stat(mine) { |run| run.dig(:memory, :end) },
                mixed_jobs_per_s: stat(mine) { |run| run.dig(:mixed, :jobs_per_s) },
                cpu_jobs_per_s: stat(mine) { |run| run.dig(:cpu, :jobs_per_s) }}]
      end.to_h
    end

    private

    # The cores busy outside the setup's processes during its batches: the
    # enqueuing runner, redis-server, and whatever else ran on the machine.
    def outside_load
      values = @good.flat_map { |run| %i[mixed cpu].filter_map { |key| run[key] && run[key][:machine_busy_cores] - run[key][:tree_cores] } }
      return "CPU outside the setups: not measured" if values.empty?

      format("cores busy outside the setup's own processes during the batches (the enqueuing runner, redis-server, " \
        "anything else on the machine): median %.2f, max %.2f of %d", Bench::Stats.median(values), values.max, @env[:cores])
    end

    def setups_list
      names = @runs.map { |run| run[:setup] }.uniq
      JobsBench::SETUPS.select { |setup| names.include?(setup.name) }
        .map { |setup| "- `#{setup.name}`: #{setup.description}" }.join("\n") + "\n"
    end

    def stat(runs)
      Bench::Stats.summary(runs.filter_map { |run| yield run })
    end

    def runs_of(name) = @good.select { |run| run[:setup] == name }

    def system_table(system, title)
      setups = JobsBench::SETUPS.select { |setup| setup.system.to_s == system && @runs.any? { |run| run[:setup] == setup.name } }
      return "" if setups.empty?

      baseline = runs_of(JobsBench::BASELINES.fetch(setup_system(system)))
      rows = setups.map do |setup|
        mine = runs_of(setup.name)
        processes = mine.map { |run| run[:processes] }.uniq.join("/")
        ["`#{setup.name}`", processes,
          range(mine) { |run| run[:rest_pss] },
          range(mine) { |run| run.dig(:memory, :average) },
          range(mine) { |run| run.dig(:memory, :peak) },
          range(mine) { |run| run.dig(:memory, :end) },
          *(idle? ? [range(mine) { |run| run[:idle_pss] }] : []),
          range(mine) { |run| run.dig(:mixed, :jobs_per_s) },
          range(mine) { |run| run.dig(:mixed, :cpu_ms_per_job) },
          range(mine) { |run| run.dig(:cpu, :jobs_per_s) },
          ratio_range(mine, baseline) { |run| run.dig(:cpu, :jobs_per_s) },
          mine.map { |run| run[:reforks] }.compact.then { |counts| counts.empty? ? "" : counts.join("/") },
          mine.filter_map { |run| run[:major_gcs]&.then { |m| "#{m[:gcs]} in #{m[:processes]}" } }.join(", "),
          mine.sum { |run| (run.dig(:mixed, :errors) || 0) + (run.dig(:cpu, :errors) || 0) }]
      end
      headers = ["setup", "processes", "Σ PSS at rest (MiB)", "Σ PSS avg (MiB)", "Σ PSS peak", "Σ PSS end",
        *(idle? ? ["Σ PSS #{@options[:idle].round} s later, idle"] : []),
        "mixed jobs/s", "CPU ms/job (mixed)", "CPU-bound jobs/s", "× 1 process 1 thread", "reforks",
        "major GCs in the processes that ran jobs (per repetition)", "job errors"]
      "## #{title}\n\n#{Bench::Report.markdown_table(headers, rows)}#{fork_hook_note(setups)}"
    end

    # Whether herd/fork really ran in bin/jobs's supervisor: each process it
    # forked wrote a line (bench/jobs/overlay/config/initializers/bench_jobs.rb).
    def fork_hook_note(setups)
      runs = setups.select { |setup| setup.env["BENCH_JOBS_HERD_FORK"] }.flat_map { |setup| runs_of(setup.name) }
      return "" if runs.empty?

      counts = runs.map { |run| "#{(run[:herd_fork] || []).size} of #{(run[:processes] || 1) - 1}" }
      first = runs.filter_map { |run| run[:herd_fork]&.first }.first
      "\nherd/fork in `bin/jobs`'s supervisor: forked processes that logged its hook, per repetition: " \
        "#{counts.join(", ")}; what the first fork's heap preparation did: `#{first&.split(" ", 3)&.last || "nothing logged"}` " \
        "(the later forks find the heap already prepared).\n"
    end

    # What the kernel's page merging cost: ksmd's CPU over each +ksm run.
    def ksm_note
      ksm = @good.select { |run| run[:setup].end_with?("+ksm") }
      return "" if ksm.empty?

      settings = @env[:ksm] || {}
      cpu = ksm.group_by { |run| run[:setup] }.map { |name, runs| "`#{name}` #{range(runs) { |run| run[:ksmd_cpu_s] }} s" }
      "\nKSM: ksmd #{settings.map { |key, value| "#{key} #{value}" }.join(", ")}; ksmd's CPU over each run " \
        "(boot to stop; the setups' own CPU excludes it): #{cpu.join(", ")}.\n"
    end

    def idle? = @options[:idle].to_f.positive?

    def setup_system(system) = system.to_sym

    def range(runs, format = "%.1f", &block)
      values = runs.filter_map(&block)
      Bench::Stats.range(Bench::Stats.summary(values), format)
    end

    # A run's value over the other setup's in the same repetition (medians when unpaired).
    def ratios(mine, others, &block)
      pairs = mine.filter_map do |run|
        other = others.find { |o| o[:round] == run[:round] }
        a = block.call(run)
        b = other && block.call(other)
        (a && b && b.positive?) ? a / b : nil
      end
      return pairs unless pairs.empty?

      a = Bench::Stats.median(mine.filter_map(&block))
      b = Bench::Stats.median(others.filter_map(&block))
      (a && b&.positive?) ? [a / b] : []
    end

    def ratio_range(mine, others, &block)
      values = ratios(mine, others, &block)
      Bench::Stats.range(Bench::Stats.summary(values), "%.2f×")
    end

    def targets_table
      rows = JobsBench::MEMORY_TARGETS.filter_map do |name, other, limit|
        mine = runs_of(name)
        theirs = runs_of(other)
        next if mine.empty? || theirs.empty?

        avg = ratios(mine, theirs) { |run| run.dig(:memory, :average) }
        peak = ratios(mine, theirs) { |run| run.dig(:memory, :peak) }
        idle = ratios(mine, theirs) { |run| run[:idle_pss] }
        ["Σ PSS `#{name}` ÷ `#{other}`", limit ? "≤ #{limit}×" : "(no target)",
          Bench::Stats.range(Bench::Stats.summary(avg), "%.2f×"), Bench::Stats.range(Bench::Stats.summary(peak), "%.2f×"),
          limit ? verdict(avg, peak) { |value| value <= limit } : "",
          *(idle? ? [Bench::Stats.range(Bench::Stats.summary(idle), "%.2f×")] : [])]
      end
      JobsBench::SETUPS.reject(&:baseline).each do |setup|
        mine = runs_of(setup.name)
        base = runs_of(JobsBench::BASELINES.fetch(setup.system))
        next if mine.empty? || base.empty?

        speedup = ratios(mine, base) { |run| run.dig(:cpu, :jobs_per_s) }
        rows << ["CPU-bound jobs/s `#{setup.name}` ÷ `#{JobsBench::BASELINES.fetch(setup.system)}`", "≥ #{JobsBench::CPU_TARGET}×",
          Bench::Stats.range(Bench::Stats.summary(speedup), "%.2f×"), "", verdict(speedup) { |value| value >= JobsBench::CPU_TARGET },
          *(idle? ? [""] : [])]
      end
      Bench::Report.markdown_table(["target", "wanted", "measured: avg (per repetition)", "peak", "met?",
        *(idle? ? ["Σ PSS #{@options[:idle].round} s later, idle (no target)"] : [])], rows)
    end

    # "yes" when every repetition meets it, "median only" when the median does, else "no".
    def verdict(values, also = nil, &meets)
      return "–" if values.empty?

      all = values + (also || [])
      if all.all?(&meets) then "yes"
      elsif meets.call(Bench::Stats.median(values)) then "median only"
      else "no"
      end
    end

    def errors_section
      failed = @runs.select { |run|
        run[:error] || run[:stop_problems] || run.dig(:mixed, :errors).to_i.positive? ||
          run.dig(:cpu, :errors).to_i.positive? || (run[:jobs_run] && run[:jobs_run] != run[:jobs_expected])
      }
      return "" if failed.empty?

      lines = failed.map do |run|
        what = [run[:error]&.lines&.first&.strip, run[:stop_problems]&.join("; "),
          (run[:jobs_run] && run[:jobs_run] != run[:jobs_expected]) ? "#{run[:jobs_run]} job runs for #{run[:jobs_expected]} jobs" : nil,
          (run.dig(:mixed, :error_samples) || []).first].compact.join("; ")
        "- `#{run[:setup]}` repetition #{run[:round]}: #{what}"
      end
      "\n## Problems\n\n#{lines.join("\n")}\n"
    end
  end
end
