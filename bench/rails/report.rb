# frozen_string_literal: true

require_relative "../support/report"
require_relative "../support/runs_report"
require_relative "servers_line"

module RailsBench
  # bench/results/rails.md from the runs.
  class Report < Bench::RunsReport
    include ServersLine

    def ok_runs(name)
      @runs.select { |run| run[:server] == name && !run[:error] }
    end

    def servers
      @runs.map { |run| run[:server] }.uniq
    end

    # "median (min–max)"
    def cell(values, digits = 1)
      return "–" if values.empty?

      stats = Bench::Stats.summary(values)
      (stats[:n] == 1) ? format("%.#{digits}f", stats[:median]) : Bench::Stats.range(stats, "%.#{digits}f")
    end

    def values(name, &block)
      ok_runs(name).map(&block).compact
    end

    # Per round, herd's figure over the peer's: pairs runs of the same round
    # (runs of results written before a figure existed have none).
    def ratios(herd, peer, &block)
      ok_runs(herd).filter_map do |run|
        other = ok_runs(peer).find { |candidate| candidate[:round] == run[:round] }
        mine, theirs = [run, other].map { |candidate| candidate && block.call(candidate) }
        mine / theirs.to_f if mine && theirs
      end
    end

    def summary
      avg = ->(run) { run.dig(:memory, :average) }
      peak = ->(run) { run.dig(:memory, :peak) }
      rps = ->(run) { run[:rps] }
      cpu = ->(run) { run[:cpu_ms_per_request] }
      {
        avg_ratio: ratios("herd", "pitchfork", &avg), peak_ratio: ratios("herd", "pitchfork", &peak),
        rps_ratio: ratios("herd", "puma", &rps), cpu_ratio: ratios("herd", "puma", &cpu),
        avg_ratio_median: Bench::Stats.median(ratios("herd", "pitchfork", &avg)),
        peak_ratio_median: Bench::Stats.median(ratios("herd", "pitchfork", &peak)),
        rps_ratio_median: Bench::Stats.median(ratios("herd", "puma", &rps)),
        cpu_ratio_median: Bench::Stats.median(ratios("herd", "puma", &cpu)),
        cpu_ms_per_request: servers.to_h { |name| [name, Bench::Stats.median(values(name) { |r| r[:cpu_ms_per_request] })] }
      }
    end

    def table
      rows = servers.map do |name|
        runs = ok_runs(name)
        errors = @runs.count { |run| run[:server] == name && run[:error] }
        [name, "#{runs.size}#{" (+#{errors} failed)" if errors.positive?}",
          cell(values(name) { |r| r.dig(:memory, :average) }), cell(values(name) { |r| r.dig(:memory, :peak) }),
          cell(values(name) { |r| r.dig(:memory, :end) }), cell(values(name) { |r| r[:booted_pss] }),
          cell(values(name) { |r| r[:rps] }), cell(values(name) { |r| r[:cpu_ms_per_request] }, 2),
          cell(values(name) { |r| r.dig(:latency_ms, :p50) }),
          cell(values(name) { |r| r.dig(:latency_ms, :p99) }),
          values(name) { |r| r[:failed] }.sum, values(name) { |r| r[:reforks] }.then { |v| v.empty? ? "–" : v.join(", ") }]
      end
      Bench::Report.markdown_table(["server", "runs", "Σ PSS time avg (MiB)", "peak", "end", "booted, idle",
        "req/s", "CPU ms per request", "p50 (ms)", "p99 (ms)", "failed", "reforks per run"], rows)
    end

    def verdict(values, ok, fmt)
      return "not measured" if values.empty?

      met = values.count(&ok)
      state = if met == values.size
        "**met**"
      elsif met.zero?
        "**not met**"
      else
        "**met in #{met} of #{values.size} rounds**"
      end
      "#{state} (#{spread(values, fmt)})"
    end

    # "min–max", with the median past two rounds
    def spread(values, fmt)
      return "not measured" if values.empty?

      "#{fmt.call(values.min)}–#{fmt.call(values.max)}#{", median #{fmt.call(Bench::Stats.median(values))}" if values.size > 2}"
    end

    def targets
      s = summary
      x = ->(v) { format("%.2fx", v) }
      rows = [
        ["herd's time-averaged Σ PSS ≤ 0.5× Pitchfork's", verdict(s[:avg_ratio], ->(v) { v <= 0.5 }, x)],
        ["herd's peak Σ PSS ≤ Pitchfork's peak", verdict(s[:peak_ratio], ->(v) { v <= 1.0 }, x)],
        ["herd's req/s ≥ 0.95× Puma's (preload)", verdict(s[:rps_ratio], ->(v) { v >= 0.95 }, x)],
        ["herd's CPU per request against Puma's (preload): no target, lower is better", spread(s[:cpu_ratio], x)]
      ]
      Bench::Report.markdown_table(["target", "herd / peer per round"], rows)
    end

    def config_list
      list = @options[:servers_described].map { |name, description| "- `#{name}`: #{description}" }.join("\n")
      ksm = @options[:ksm] or return list
      ksmd = @runs.select { |run| run[:server].end_with?("-ksm") && run[:ksmd_cpu_s] }
        .map { |run| "#{run[:server]} #{run[:ksmd_cpu_s]} s" }.join(", ")
      "#{list}\n\nKSM: ksmd #{ksm.map { |key, value| "#{key} #{value}" }.join(", ")}. A `-ksm` setup's CPU per " \
        "request includes ksmd's CPU over its requests (#{ksmd})."
    end

    def markdown
      <<~MD
        # bench/rails: herd against the peers on a Rails app

        #{Bench::Report.environment_markdown(@env)}- servers: #{servers_line}
        - #{versions_line}
        - load average at start / end: #{@env[:loadavg_start]} / #{@env[:loadavg_end]}; #{@env[:seconds]} s in all

        #{app.description}, #{RailsBench::THINGS} records, a fresh copy of its directory
        per run. #{@options[:workers]} workers per server, one request at a time per worker (Puma: `threads 1, 1`):

        #{config_list}

        Load: #{Client::CLIENTS} client processes (bench/rails/client.rb), one request at a time each on a new
        connection (`Connection: close`, like `ab -c 4` without `-k`), **#{@options[:requests]} requests per run**
        from the moment the server is up (booted, its workers running): the reforks of the schedule happen
        during the run. Each client repeats #{Client::CYCLE.size} requests: #{Client::MIX.map { |k, n| "#{n}× #{k}" }.join(", ")}
        (`new`: the form, which gives the session cookie and the CSRF token; `index`/`show`: HTML;
        `*_json`: jbuilder views; `update`: a POST of the edit form, `_method=patch` with the authenticity
        token and the cookie, answered 303, followed by the `show` it redirects to). A request fails when it
        gets no response or another status than the scaffold's (200, 303 for the update).

        Memory: Σ PSS of the server's process tree (`Herd::Memory.tree` of the pid the driver spawned:
        monitor or master, molds, workers) every #{@options[:interval]} s from the first request to the
        last; **time average** (trapezoids), peak, and the value at the end. "booted, idle": before the
        first request. Each cell: median (min–max) over the runs (one per round); servers interleaved, their
        order rotating each round. The machine is shared (2 cores, other engineers' tests): compare
        figures within a round, read ranges rather than single figures.

        CPU per request: user + system seconds of the server's whole process tree from the first request
        to the last (`/proc/PID/stat` at both ends: every process of the tree with the CPU of the children
        it reaped, so workers that exited during the run count), over the requests answered.

        ## Results

        #{table}
        ## Targets

        #{targets}
        #{@options[:notes]}
      MD
    end
  end
end
