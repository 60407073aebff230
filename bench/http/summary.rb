# frozen_string_literal: true

require_relative "support"

module HttpBench
  # Medians over the repetitions, ratios to herd and the targets, as
  # markdown tables and as data.
  class Summary
    BASELINE = "herd"
    TARGET_PEER = "pitchfork"

    def initialize(measurements, servers:, apps:)
      @measurements = measurements
      @servers = servers
      @apps = apps
    end

    # @return [Hash{String => Hash{String => Hash}}] app => server => figures
    def data
      @data ||= @apps.to_h do |app|
        [app.name, @servers.to_h { |server| [server.name, figures(app.name, server.name)] }]
      end
    end

    # @return [Hash{String => Hash}] app => :rps and :p99 target checks
    def targets
      data.transform_values do |by_server|
        herd = by_server[BASELINE]
        peer = by_server[TARGET_PEER]
        next {met: nil, reason: "#{TARGET_PEER} or herd did not run"} unless herd&.dig(:rps) && peer&.dig(:rps)

        rps = herd[:rps][:median] >= peer[:rps][:median]
        p99 = herd[:p99_ms][:median] <= peer[:p99_ms][:median]
        {met: rps && p99, rps: rps, p99: p99}
      end
    end

    # Issue #19's hot-path goal: CPU per request no more than Unicorn's,
    # req/s at least 1.1x the best of Unicorn, Puma and Pitchfork.
    # @return [Hash{String => Hash}] app => figures and checks (nil when a server is missing)
    def hot_path_targets
      data.transform_values do |by_server|
        herd = by_server[BASELINE]
        unicorn = by_server["unicorn"]
        peers = %w[unicorn puma pitchfork].filter_map { |name| by_server[name]&.dig(:rps, :median) }
        next nil unless herd&.dig(:rps) && unicorn&.dig(:rps) && peers.size == 3

        cpu = herd[:cpu_us_per_request][:workers] + herd[:cpu_us_per_request][:others]
        unicorn_cpu = unicorn[:cpu_us_per_request][:workers] + unicorn[:cpu_us_per_request][:others]
        kept = by_server["herd-keep-alive"]&.dig(:rps, :median)
        {cpu: cpu.round(1), unicorn_cpu: unicorn_cpu.round(1), cpu_met: cpu <= unicorn_cpu,
         rps: herd[:rps][:median].round, best_peer_rps: peers.max.round, rps_ratio: (herd[:rps][:median] / peers.max).round(2),
         rps_met: herd[:rps][:median] >= 1.1 * peers.max,
         keep_alive_rps: kept&.round, keep_alive_ratio: kept && (kept / peers.max).round(2), keep_alive_met: kept && kept >= 1.1 * peers.max}
      end
    end

    def markdown
      @apps.map { |app| app_markdown(app) }.join("\n") + targets_markdown + hot_path_markdown
    end

    def hot_path_markdown
      lines = hot_path_targets.map do |app, t|
        next "- #{app}: not evaluated (herd, unicorn, puma and pitchfork must all run)" unless t

        line = "- #{app}: CPU µs/req #{t[:cpu]} vs Unicorn #{t[:unicorn_cpu]} (#{t[:cpu_met] ? "**met**" : "**not met**"}); " \
          "req/s #{t[:rps]} = #{t[:rps_ratio]}x the best peer's #{t[:best_peer_rps]} (#{t[:rps_met] ? "**met**" : "**not met**"}, goal 1.1x)"
        next line unless t[:keep_alive_rps]

        "#{line}; herd with keep_alive (as Puma keeps connections) #{t[:keep_alive_rps]} = #{t[:keep_alive_ratio]}x " \
          "(#{t[:keep_alive_met] ? "**met**" : "**not met**"})"
      end
      "\n### Issue #19 goal: CPU µs/req ≤ Unicorn's, req/s ≥ 1.1x the best of Unicorn, Puma, Pitchfork (medians)\n\n#{lines.join("\n")}\n"
    end

    # Measurements left out of the medians, and servers that did not stop cleanly.
    def anomalies_markdown
      lines = @measurements.filter_map do |m|
        notes = [invalid(m), *m[:stop_problems], ("exit #{m[:exit]}" if m[:log_tail] && m[:exit]),
          ("other processes used #{m[:other_cpu]} cores, #{m[:disturbed_attempts].size + 1} attempts (kept)" if m[:disturbed])].compact
        "- rep #{m[:rep]} #{m[:app]} #{m[:server]}: #{notes.join("; ")}" unless notes.empty?
      end
      return "" if lines.empty?

      "### Anomalies (excluded from the medians when invalid; server logs in http.json)\n\n#{lines.join("\n")}\n"
    end

    # Every repetition, for the curious.
    def raw_markdown
      rows = @measurements.map do |m|
        next [m[:rep], m[:app], m[:server], "failed: #{m[:error].lines.first.strip}"] + [""] * 7 if m[:error]

        cpu = m[:cpu_us_per_request]
        [m[:rep], m[:app], m[:server], format("%.0f", m[:rps]), ms(m[:latency_us][:p50]), ms(m[:latency_us][:p99]),
          m[:errors].values.sum, "#{cpu[:workers]} + #{cpu[:others]} (wrk #{cpu[:wrk]})", format("%.2f", m[:other_cpu]), m[:loadavg]]
      end
      Bench::Report.markdown_table(["rep", "app", "server", "req/s", "p50 ms", "p99 ms", "errors",
        "CPU µs/req: workers + rest (wrk)", "other CPU (cores)", "load avg after"], rows)
    end

    private

    # @return [String, nil] why a measurement does not count
    def invalid(m)
      return "failed: #{m[:error].lines.first.strip}" if m[:error]

      errors = m[:errors].values.sum
      if errors > m[:requests] / 100
        "#{errors} socket errors for #{m[:requests]} requests (#{m[:errors].map { |k, v| "#{k} #{v}" }.join(", ")})"
      elsif m[:alive_after] != 200
        "no HTTP 200 right after the run (#{m[:alive_after].inspect})"
      end
    end

    def figures(app, server)
      runs = @measurements.select { |m| m[:app] == app && m[:server] == server }
      ok = runs.reject { |m| invalid(m) }
      return {runs: runs.size, failed: runs.size} if ok.empty?

      lat = ->(key) { Bench::Stats.summary(ok.map { |m| m[:latency_us][key] / 1e3 }) }
      cpu = ->(key) { Bench::Stats.median(ok.map { |m| m[:cpu_us_per_request][key] }) }
      {runs: runs.size, failed: runs.size - ok.size, rps: Bench::Stats.summary(ok.map { |m| m[:rps] }),
       p50_ms: lat.call(:p50), p99_ms: lat.call(:p99), p999_ms: lat.call(:p999),
       errors: ok.sum { |m| m[:errors].values.sum }, keep_alive: ok.first[:keep_alive],
       cpu_us_per_request: %i[workers others wrk].to_h { |key| [key, cpu.call(key)] }}
    end

    def app_markdown(app)
      by_server = data[app.name]
      base = by_server[BASELINE]
      rows = @servers.map do |server|
        f = by_server[server.name]
        next [server.name, server.version || "not installed", "skipped: #{server.missing}"] + [""] * 8 if server.missing
        next [server.name, server.version, "all #{f[:runs]} runs failed"] + [""] * 8 unless f[:rps]

        [server.name, server.version, Bench::Stats.range(f[:rps], "%.0f"), ratio(f, base, :rps), Bench::Stats.range(f[:p50_ms], "%.2f"),
          Bench::Stats.range(f[:p99_ms], "%.2f"), ratio(f, base, :p99_ms), format("%.2f", f[:p999_ms][:median]),
          f[:failed].zero? ? f[:errors] : "#{f[:errors]} (#{f[:failed]} of #{f[:runs]} runs excluded)", f[:keep_alive] ? "yes" : "no",
          "#{f[:cpu_us_per_request][:workers]} + #{f[:cpu_us_per_request][:others]}"]
      end
      <<~MD
        ### #{app.name}: `GET #{app.path}` (#{app.description})

        #{Bench::Report.markdown_table(["server", "version", "req/s", "req/s vs herd", "p50 ms", "p99 ms", "p99 vs herd",
          "p99.9 ms", "errors", "keep-alive", "CPU µs/req: workers + rest"], rows)}
      MD
    end

    def targets_markdown
      lines = targets.map do |app, t|
        next "- #{app}: not evaluated (#{t[:reason]})" if t[:met].nil?

        herd = data[app][BASELINE]
        peer = data[app][TARGET_PEER]
        "- #{app}: #{t[:met] ? "**met**" : "**not met**"} — req/s #{format("%.0f", herd[:rps][:median])} vs " \
          "#{format("%.0f", peer[:rps][:median])} (#{t[:rps] ? "ok" : "below"}), p99 #{ms_stat(herd[:p99_ms])} vs " \
          "#{ms_stat(peer[:p99_ms])} ms (#{t[:p99] ? "ok" : "worse"})"
      end
      "\n### Target: herd ≥ #{TARGET_PEER} in req/s, p99 no worse (medians)\n\n#{lines.join("\n")}\n"
    end

    def ratio(figures, base, key)
      return "" unless base[key]

      format("%.2fx", figures[key][:median] / base[key][:median])
    end

    def ms(us)
      format("%.2f", us / 1e3)
    end

    def ms_stat(stat)
      format("%.2f", stat[:median])
    end
  end
end
