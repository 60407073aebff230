# frozen_string_literal: true

require_relative "../support/report"
require_relative "../support/stats"
require_relative "servers"

module CowBench
  # Medians, ratios, the floor and the targets, as markdown tables and a hash.
  class Summary
    HERD_VS_PITCHFORK = 0.85 # target: herd's Σ PSS at most this times Pitchfork's median
    HERD_VS_FLOOR = 1.10 # target: herd's Σ PSS within 10% of the floor

    def initialize(runs:, floors:, servers:, apps:)
      @runs = runs.reject { |run| run[:error] }
      @floors = floors.reject { |floor| floor[:error] }
      @servers = servers
      @apps = apps
    end

    def markdown(phase: nil)
      @apps.map { |app| "### #{app.name}#{" (+ more requests)" if phase}\n\n#{table(app, phase)}" }.join("\n")
    end

    def floors_markdown
      rows = @apps.filter_map do |app|
        floor = floor(app)
        next unless floor

        [app.name, cell(floor[:gc_only]), cell(floor[:solo]), cell(floor[:fork_uss], 2), floor[:forks], floor[:monitor] || "no herd run",
          mib(floor[:value]), mib(floor[:unsealed_value]), cell(floor[:gc_uss], 2), cell(floor[:served_uss]), mib(floor[:served_value])]
      end
      serving = @floors.first&.dig(:serving)
      Bench::Report.markdown_table(["app", "one warmed process after a full GC, PSS alone", "the same after malloc's free chunks are sealed",
        "each fork's USS after 1 request", "forks", "herd monitor PSS", "floor", "floor from the unsealed process",
        "a fork's USS after 1 request and its first GC", "each fork's USS after #{serving} requests", "the same with those"], rows)
    end

    def targets_markdown
      rows = @apps.flat_map { |app| targets(app).map { |t| [app.name, t[:what], t[:value], t[:target], result(t)] } }
      Bench::Report.markdown_table(%w[app target measured goal result], rows)
    end

    # The targets are herd's, with its defaults; a variant's row is there to
    # compare, and says so when it misses.
    def result(target)
      return "met" if target[:met]

      target[:what].start_with?("herd /") ? "MISSED" : "missed (a variant, not herd's defaults)"
    end

    def spread_markdown
      rows = @apps.flat_map do |app|
        @servers.filter_map do |server|
          totals = totals(server, app)
          next if totals.empty?

          early = runs(server, app).map { |run| format("%.1f", run[:early][:total_pss]) }.join(", ")
          inside = runs(server, app).map { |run| run[:inside] && (run.dig(:inside, :total_pss) || "failed") }
          [app.name, server.name, totals.map { |total| format("%.1f", total) }.join(", "), mib(totals.min), mib(totals.max),
            format("%.2f", totals.max / totals.min), early, inside.compact.empty? ? "-" : inside.map { |value| value || "-" }.join(", ")]
        end
      end
      Bench::Report.markdown_table(["app", "server", "Σ PSS per repetition (MiB)", "min", "max", "max/min",
        "3 s after ab, not waiting (Pitchfork's timing)", "the same, read inside a request (Pitchfork's reading)"], rows)
    end

    # The processes of one run whose Σ PSS is the median of its server's.
    def processes_markdown(server_name, app)
      server = @servers.find { |s| s.name == server_name }
      run = server && median_run(server, app)
      return "" unless run

      rows = run[:memory][:rows].map do |row|
        [row[:pid], row[:title][0, 60], row[:pss], row[:uss], row[:private_dirty], row[:rss]]
      end
      events = run[:events].empty? ? "" : "\nIts log, whole run (warm-up and more):\n\n```\n#{run[:events].join("\n")}\n```\n"
      "#{server_name}, #{app.name}, repetition #{run[:rep]}, after the warm-up:\n\n" +
        Bench::Report.markdown_table(%w[pid title PSS USS private_dirty RSS], rows) + events
    end

    def raw_markdown
      rows = @runs.sort_by { |run| [run[:app], run[:server], run[:rep]] }.map do |run|
        memory = run[:memory]
        more = run[:more] && "#{run[:more][:memory][:total_pss]} (+#{run[:more][:requests]} requests, gen " \
          "#{run[:more][:settle][:generation].inspect}#{", still reforking" unless run[:more][:steady]})"
        [run[:app], run[:server], run[:rep], memory[:total_pss], memory[:worker_pss], memory[:worker_uss], memory[:mold_pss],
          memory[:monitor_pss], run[:settle][:generation].inspect, run[:reforks] || "-", settled(run[:settle]),
          "#{run[:ab][:rps]} (#{run[:ab][:failed]} failed)", "#{run[:early][:total_pss]} (#{run[:early][:processes]} procs)", more || "-"]
      end
      Bench::Report.markdown_table(["app", "server", "rep", "Σ PSS", "worker PSS", "worker USS", "mold", "monitor/master",
        "gen", "reforks", "settled", "ab req/s", "Σ PSS 3 s after ab", "Σ PSS after more"], rows)
    end

    # Everything computed, for the JSON.
    def to_h
      @apps.to_h do |app|
        [app.name, {floor: floor(app), targets: targets(app),
                    servers: @servers.to_h { |server| [server.name, stats(server, app)] }}]
      end
    end

    private

    def table(app, phase)
      herd_server = @servers.find { |s| s.name == "herd" }
      herd = herd_server && stats(herd_server, app, phase)&.dig(:total, :median)
      rows = @servers.filter_map do |server|
        stats = stats(server, app, phase)
        next [server.name, "skipped: #{server.missing}"] if server.missing
        next unless stats

        [server.name, server.version, stats[:processes], cell(stats[:total]), herd ? format("%.2f", stats[:total][:median] / herd) : "-",
          cell(stats[:worker_pss]), cell(stats[:worker_uss], 2), mib(stats[:mold][:median]), mib(stats[:monitor][:median]),
          stats[:generations].join(", "), stats[:settled], stats[:rps][:median]]
      end
      Bench::Report.markdown_table(["server", "version", "procs", "Σ PSS MiB", "vs herd", "worker PSS", "worker USS",
        "mold", "monitor/master", "gen per rep", "settled", "ab req/s"], rows)
    end

    def stats(server, app, phase = nil)
      runs = runs(server, app).map { |run| phase ? run[phase] : run }.compact
      return nil if runs.empty?

      memory = ->(key) { Bench::Stats.summary(runs.filter_map { |run| run[:memory][key] }) }
      {total: memory.call(:total_pss), worker_pss: memory.call(:worker_pss), worker_uss: memory.call(:worker_uss),
       mold: memory.call(:mold_pss), monitor: memory.call(:monitor_pss),
       processes: runs.map { |run| run[:memory][:processes] }.uniq.join("/"),
       generations: runs.map { |run| run[:settle][:generation].inspect },
       settled: "#{runs.count { |run| run[:settle][:settled] }}/#{runs.size}",
       rps: Bench::Stats.summary(runs.filter_map { |run| run[:ab][:rps] })}
    end

    def runs(server, app)
      @runs.select { |run| run[:server] == server.name && run[:app] == app.name }
    end

    def totals(server, app)
      runs(server, app).map { |run| run[:memory][:total_pss] }
    end

    def median_run(server, app)
      runs(server, app).sort_by { |run| run[:memory][:total_pss] }[runs(server, app).size / 2]
    end

    # One warmed process's PSS alone (at its smallest: after a full GC and
    # with malloc's free pages given back) + WORKERS forks' USS + herd's
    # monitor (which never loads the app): what 1 + WORKERS app processes and
    # a monitor would cost if nothing but the forks' own work were private.
    def floor(app)
      floors = @floors.select { |floor| floor[:app] == app.name }
      return nil if floors.empty?

      gc_only = Bench::Stats.summary(floors.map { |floor| floor[:solo_pss] })
      sealed = floors.filter_map { |floor| floor[:sealed_pss] }
      solo = (sealed.size == floors.size) ? Bench::Stats.summary(sealed) : gc_only # older runs did not seal
      uss = ->(key) { Bench::Stats.summary(floors.flat_map { |floor| (floor[key] || []).map { |child| child[:uss] } }) }
      fork_uss = uss.call(:children)
      gc_uss = Bench::Stats.summary(floors.filter_map { |floor| floor.dig(:first_gc, :uss_after) })
      served_uss = uss.call(:served_children)
      herd = @servers.find { |s| s.name == "herd" }
      monitor = (herd && runs(herd, app).any?) ? stats(herd, app)[:monitor][:median] : nil
      {gc_only: gc_only, solo: solo, fork_uss: fork_uss, forks: WORKERS, monitor: monitor, gc_uss: gc_uss, served_uss: served_uss,
       value: (solo[:median] + WORKERS * fork_uss[:median] + monitor.to_f).round(1),
       unsealed_value: (gc_only[:median] + WORKERS * fork_uss[:median] + monitor.to_f).round(1),
       served_value: served_uss[:median] && (solo[:median] + WORKERS * served_uss[:median] + monitor.to_f).round(1)}
    end

    # herd's targets, and the same ratios for its variants, after the
    # warm-up and (with --more) once the newest generation has served; for
    # an app that reports its own reading, also Pitchfork's benchmark as it
    # reads itself: inside a request, 3 s after ab.
    def targets(app)
      pitchfork = @servers.find { |s| s.name == "pitchfork" }
      floor = floor(app)
      inside_targets(app, pitchfork) + [[nil, "after the warm-up"], [:more, "steady"]].flat_map do |phase, label|
        pitchfork_total = pitchfork && stats(pitchfork, app, phase)&.dig(:total, :median)
        @servers.select { |s| s.name.start_with?("herd") }.flat_map do |herd|
          total = stats(herd, app, phase)&.dig(:total, :median)
          next [] unless total

          [(target("#{herd.name} / Pitchfork's median, #{label}", total, pitchfork_total, HERD_VS_PITCHFORK) if pitchfork_total),
            (target("#{herd.name} / floor, #{label}", total, floor[:value], HERD_VS_FLOOR) if floor),
            (if floor && herd.name == "herd"
               target("#{herd.name} / floor from the unsealed process (the issue's wording), #{label}", total,
                 floor[:unsealed_value], HERD_VS_FLOOR)
             end)].compact
        end
      end
    end

    def inside_targets(app, pitchfork)
      reference = pitchfork && inside(pitchfork, app)[:median]
      return [] unless reference

      @servers.select { |s| s.name.start_with?("herd") }.filter_map do |herd|
        total = inside(herd, app)[:median]
        total && target("#{herd.name} / Pitchfork's median, read inside a request 3 s after ab (Pitchfork's benchmark)",
          total, reference, HERD_VS_PITCHFORK)
      end
    end

    # The readings the app reported inside a request, 3 s after ab.
    def inside(server, app)
      Bench::Stats.summary(runs(server, app).filter_map { |run| run.dig(:inside, :total_pss) })
    end

    def target(what, total, reference, goal)
      ratio = total / reference
      {what: what, value: format("%.2f (%.1f / %.1f MiB)", ratio, total, reference), target: "≤ #{goal}", met: ratio <= goal}
    end

    def settled(settle)
      settle[:settled] ? "yes, #{settle[:seconds]} s" : "no: #{settle[:detail]}"
    end

    def cell(stats, digits = 1) = Bench::Stats.range(stats, "%.#{digits}f")

    def mib(value)
      value ? format("%.1f", value) : "-"
    end
  end
end
