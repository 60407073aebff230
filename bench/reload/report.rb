# frozen_string_literal: true

require_relative "../support/report"
require_relative "../support/runs_report"
require_relative "../rails/servers_line"

module ReloadBench
  # bench/results/reload.md from the runs.
  class Report < Bench::RunsReport
    include RailsBench::ServersLine

    def table
      rows = @runs.map do |run|
        next error_row(run, 13) if run[:error]

        m = run[:memory]
        r = run[:responses]
        [run[:server], run[:round], m[:steady_median], m[:new_mold][:pss], m[:bound], m[:peak],
          m[:pass] ? "**pass** (#{m[:margin]} MiB under)" : "**fail** (#{-m[:margin]} MiB over)",
          m[:strict_pass] ? "pass" : "fail", run[:failed], run[:requests],
          r[:all_new_after_roll] ? "yes (#{r[:after_roll].map { |k, v| "#{v}× #{k}" }.join(", ")})" : "**no** (#{r[:after_roll].inspect})",
          run[:times][:mold_ready].then { |t| (t - run[:times][:signal]).round(1) }, run[:times][:roll_seconds]]
      end
      Bench::Report.markdown_table(["server", "round", "steady Σ PSS (MiB)", "new mold PSS", "bound: (steady + mold) × 1.1",
        "peak during roll", "peak ≤ bound", "peak ≤ steady + mold × 1.1", "failed", "requests", "all responses new after the roll",
        "mold ready (s after signal)", "roll (s)"], rows)
    end

    def describe(run)
      (run[:signal].to_s == "HUP") ? "`kill -HUP` to herd's monitor (#{run[:description]})" : "`kill -USR1` (phased restart) to Puma's master, fork_worker"
    end

    def timeline(run)
      return "" if run[:error]

      t = run[:times]
      s = run[:samples].select { |at, *| at.between?(t[:signal] - 2, t[:roll_done] + 2) }
      points = s.each_slice([s.size / 24, 1].max).map(&:first).map { |at, pss, n| "#{(at - t[:signal]).round(1)} s: #{pss.round} (#{n})" }
      peak = run[:memory][:peak_processes]&.map { |_pid, title, pss| "#{title.sub(/ requests=\d+/, "")} #{pss}" }&.join("; ")
      after = run[:samples].select { |at, *| at > t[:roll_done] + 1 }.map { |_, pss, _| pss }.max
      <<~MD
        - #{run[:server]}, round #{run[:round]} (#{describe(run)}): warm-up #{run.dig(:warm, :seconds)} s to generation #{run.dig(:warm, :generation).inspect}; signal at #{t[:signal]} s, new mold (gen #{run[:memory][:new_mold][:generation]}, pid #{run[:memory][:new_mold][:pid]}) ready #{(t[:mold_ready] - t[:signal]).round(2)} s later (PSS #{run[:memory][:new_mold][:pss]}, USS #{run[:memory][:new_mold][:uss]}, RSS #{run[:memory][:new_mold][:rss]} MiB), every worker on the new code #{t[:roll_seconds]} s after the signal; p99 #{run.dig(:latency_ms, :p99)} ms overall, #{run.dig(:latency_roll_ms, :p99).inspect} ms during the roll; #{run[:rps]} req/s.
          Σ PSS, MiB (processes), from the signal: #{points.join(", ")}.
          At the peak (#{(run[:memory][:peak_at] - t[:signal]).round(1)} s after the signal): #{peak}#{by_gen(run)}.
          After the roll (#{(t[:end] - t[:roll_done]).round(1)} s more load): Σ PSS up to #{after&.round(1).inspect} MiB.
      MD
    end

    def by_gen(run)
      sums = run[:memory][:peak_by_generation]
      return "" if sums.nil? || run[:signal].to_s != "HUP"

      " (old generation #{sums[:old] || sums["old"] || 0}, new generation #{sums[:new] || sums["new"] || 0}, monitor #{sums[:other] || sums["other"] || 0})"
    end

    def markdown
      <<~MD
        # bench/reload: memory during a reload

        #{Bench::Report.environment_markdown(@env)}- servers: #{servers_line}
        - #{versions_line}
        - load average at start / end: #{@env[:loadavg_start]} / #{@env[:loadavg_end]}; #{@env[:seconds]} s in all

        The Rails app of bench/rails (test/apps' scaffold, SQLite, production, #{RailsBench::THINGS} records) plus one
        initializer (bench/reload/release.rb) that reads a `RELEASE` file at boot and answers it in an
        `x-release` header. #{@options[:workers]} workers. Load: bench/rails's 4 clients (c4, the scaffold's HTML and
        JSON pages and the POST of its form with CSRF token and cookie), from boot to the end.

        Each run: under load, herd reforks on its schedule until generation #{@options[:warm_generation]} runs on
        every worker (a server without reforking: #{@options[:warm]} s); #{@options[:steady]} s of steady load
        (**steady** = the median Σ PSS of those seconds); then `RELEASE` goes from 1 to 2 and the driver
        signals the pid it spawned. The **new mold's PSS** is `Herd::Memory.sample` of its pid taken as soon
        as the monitor logs `mold (gen N), pid P ready` (the log polled every 20 ms), before its
        workers share its pages. Σ PSS of the tree (`Herd::Memory.tree`) every #{@options[:interval]} s; the **peak** is the
        largest from the signal to 1 s after every worker runs the new code (for herd: every worker of the new
        generation, no older mold or worker left, nothing forking). Then #{@options[:after]} s more load.
        The requirement: peak ≤ (steady + new mold) + 10%, read as **(steady + mold) × 1.1**; the column
        after it gives the stricter reading, steady + mold × 1.1. A request fails when it gets no response
        or another status than the scaffold's; "all responses new" counts the `x-release` of every request
        sent after the roll.

        ## Results

        #{table}
        ## Each run

        #{@runs.map { |run| timeline(run) }.join}
      MD
    end
  end
end
