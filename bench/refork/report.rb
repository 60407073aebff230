# frozen_string_literal: true

require_relative "../support/report"
require_relative "../support/runs_report"
require_relative "../rails/servers_line"

module ReforkBench
  # bench/results/refork.md from the runs.
  class Report < Bench::RunsReport
    include RailsBench::ServersLine

    TARGETS = {window: 0.9, p99: 2.0}.freeze

    def table
      rows = @runs.map do |run|
        next error_row(run, 14) if run[:error]

        t = run[:throughput]
        m = run[:memory]
        [run[:server], run[:round], t[:steady], "#{t[:window5]} (#{t[:window5_ratio]}×)", around(t), "#{t[:roll]} (#{t[:roll_ratio]}×)",
          run.dig(:latency_steady_ms, :p99), "#{run.dig(:latency_roll_ms, :p99)} (#{p99_ratio(run)}×)",
          m[:steady_median], m[:peak], m[:new_mold][:pss],
          (run[:times][:mold_ready] - run[:times][:signal]).round(1), run[:times][:roll_seconds], run[:failed]]
      end
      Bench::Report.markdown_table(["server", "round", "steady req/s", "req/s, 5 s from the signal",
        "the same against before and after", "req/s during the roll",
        "steady p99 (ms)", "p99 during the roll", "steady Σ PSS (MiB)", "Σ PSS peak in the roll", "new mold PSS",
        "mold ready (s)", "roll (s)", "failed"], rows)
    end

    # The window against the mean of the steady phase and the phase after
    # the roll (runs from before that column have no :after).
    def around(throughput)
      return "–" unless throughput[:window5_around_ratio]

      "#{throughput[:window5_around_ratio]}× (after: #{throughput[:after]})"
    end

    def p99_ratio(run)
      steady = run.dig(:latency_steady_ms, :p99)
      roll = run.dig(:latency_roll_ms, :p99)
      (steady && roll && steady.positive?) ? (roll / steady).round(2) : nil
    end

    # Each herd setup against the issue's targets, per round; the peak
    # against Pitchfork's in the same round.
    def targets
      ok = @runs.reject { |run| run[:error] }
      pitchfork = ok.select { |run| run[:server] == "pitchfork" }.to_h { |run| [run[:round], run[:memory][:peak]] }
      rows = ok.reject { |run| run[:server] == "pitchfork" }.map do |run|
        window = run[:throughput][:window5_ratio]
        p99 = p99_ratio(run)
        peak = pitchfork[run[:round]]
        [run[:server], run[:round], verdict(window && window >= TARGETS[:window], "#{window}×"),
          verdict(p99 && p99 <= TARGETS[:p99], "#{p99}×"),
          peak ? verdict(run[:memory][:peak] <= peak, "#{run[:memory][:peak]} vs #{peak} MiB") : "no Pitchfork run"]
      end
      Bench::Report.markdown_table(["server", "round", "5 s window ≥ 0.9× steady req/s", "p99 in the roll ≤ 2× steady",
        "Σ PSS peak ≤ Pitchfork's"], rows)
    end

    # Where each phase's CPU went (runs with a :cpu record).
    def cpu_table
      rows = @runs.reject { |run| run[:error] || !run[:cpu] }.flat_map do |run|
        run[:cpu].map do |phase, data|
          roles = data[:roles].sort_by { |_, sums| -sums[:cpu] }
            .map { |role, sums| "#{role} #{sums[:cpu]} s, #{sums[:faults]} faults" }.join("; ")
          [run[:server], run[:round], phase, data[:seconds], data[:cores], data[:ms_per_response],
            data[:idle] && "#{(data[:idle] * 100).round(1)}%", roles]
        end
      end
      return "No run recorded its CPU.\n" if rows.empty?

      Bench::Report.markdown_table(["server", "round", "phase", "seconds", "server CPU (cores)", "CPU per response (ms)",
        "machine idle", "CPU and minor faults by role"], rows)
    end

    def verdict(pass, text)
      pass ? "met (#{text})" : "**not met** (#{text})"
    end

    def markdown
      <<~MD
        # bench/refork: what one refork costs on a Rails app

        #{Bench::Report.environment_markdown(@env)}- servers: #{servers_line}
        - #{versions_line}
        - load average at start / end: #{@env[:loadavg_start]} / #{@env[:loadavg_end]}; #{@env[:seconds]} s in all

        The Rails app of bench/rails (test/apps' scaffold, SQLite, production), #{@options[:workers]} workers, bench/rails's
        4 clients (c4, new connection per request) from boot to the end. Each server runs without a refork
        schedule (`refork_after false`); after #{@options[:warm]} s of load (warm-up) and #{@options[:steady]} s of steady load, the
        driver sends **USR2** (a refork by hand) to the pid it spawned, waits until every worker runs on the
        new mold (herd: its log says the mold is ready and `ps` shows no older mold or worker; Pitchfork:
        its process titles), then #{@options[:after]} s more load. req/s counts responses completed in the
        window; "5 s from the signal" is the window that holds the refork even when the roll is shorter;
        "against before and after" divides it by the mean of the steady phase and the phase from 1 s after
        the roll to the end (this VM's vCPUs change speed within minutes: a slow or fast steady phase alone
        moves the first ratio).
        p99 is over the requests sent in the window. Σ PSS of the tree every #{@options[:interval]} s.

        ## Results

        #{table}
        ## Targets (issue #19 §1)

        #{targets}
        ## Where the CPU went

        Each of the server's processes every #{@options[:interval]} s (/proc/PID/stat: user + system time, minor
        faults), summed by role over the steady phase, the 5 s from the signal and the phase after the roll;
        "old" and "new" are the generations before and after the signal. A process that exited loses what
        it ran after its last sample; the load and the driver run on the same cores (the machine's idle
        time says whether the server had them all).

        #{cpu_table}
      MD
    end
  end
end
