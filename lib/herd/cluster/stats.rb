# frozen_string_literal: true

require_relative "../clock"
require_relative "json_writer"

module Herd
  module Cluster
    # The `/stats` document: every process of the server (role, generation,
    # pid, requests, idle or busy and on what, PSS, USS, shared %), totals
    # per generation and for the whole tree, counters, and the last reforks
    # and reloads. Built from what the monitor knows (its children, the
    # scoreboard) and from the memory sampler's latest report; it reads no
    # /proc file itself.
    #
    # Sizes are bytes. Memory fields are null until the first sample, and
    # for a process born since it.
    class Stats
      # @param monitor_pid [Integer]
      # @param children [Children]
      # @param workload [Workload]
      # @param telemetry [Telemetry]
      # @param sampler [MemorySampler, nil]
      # @param server [#call] → Hash of the monitor's own state (generation, target, state)
      def initialize(monitor_pid:, children:, workload:, telemetry:, sampler:, server:)
        @monitor_pid = monitor_pid
        @children = children
        @workload = workload
        @telemetry = telemetry
        @sampler = sampler
        @server = server
        @started = Clock.now
      end

      # @return [Hash] JSON-ready, string keys
      def to_h
        report = @sampler&.latest
        samples = report ? report.rows.to_h { |row| [row.pid, row] } : {}
        processes = [monitor_row(samples)] + @children.map { |child| child_row(child, samples) }
        processes += others(samples, processes)
        {
          "server" => server_h,
          "processes" => processes,
          "generations" => generations(processes),
          "memory" => memory_h(report, processes),
          "counters" => counters_h(processes),
          "rollouts" => @telemetry.rollouts.reverse.map { |rollout| rollout_h(rollout) }
        }
      end

      private

      def server_h
        {"pid" => @monitor_pid, "uptime" => (Clock.now - @started).round(3), "time" => JSONWriter.time(Time.now)}
          .merge(@server.call.transform_keys(&:to_s))
      end

      def monitor_row(samples)
        memory({"role" => "monitor", "pid" => @monitor_pid, "generation" => nil, "state" => "running"},
          samples[@monitor_pid])
      end

      def child_row(child, samples)
        row = {"role" => child.role.to_s, "pid" => child.pid, "generation" => child.generation}
        if child.worker?
          row["number"] = child.number
          row["requests"] = @workload.requests(child)
          row.update(worker_state(child))
          # A surge replacement starting: the worker with its number it takes over from.
          row["replaces"] = child.replaces.pid if child.replaces
        else
          row["state"] = (child.state == :spawning) ? "starting" : child.state.to_s
        end
        memory(row, child.pid && samples[child.pid])
      end

      def worker_state(child)
        return {"state" => "starting"} if child.state == :spawning

        elapsed, line = @workload.current(child)
        state = if child.state == :stopping then "stopping"
        elsif line then "busy"
        else "idle"
        end
        line ? {"state" => state, "request" => line, "request_age" => elapsed.round(3)} : {"state" => state}
      end

      # Processes of the tree the monitor did not spawn itself: what the app
      # started, the middle of a double fork caught exiting. The sample may
      # be a second old: a child reaped since is no longer shown.
      def others(samples, known)
        pids = known.map { |row| row["pid"] }
        samples.values.reject { |row| pids.include?(row.pid) || gone?(row.pid) }.map do |row|
          memory({"role" => "other", "pid" => row.pid, "generation" => nil, "state" => "running",
                  "title" => row.title}, row)
        end
      end

      def gone?(pid)
        Process.getpgid(pid)
        false
      rescue Errno::ESRCH
        true
      end

      def memory(row, sampled)
        sample = sampled&.sample
        row.merge("pss" => sample&.pss, "uss" => sample&.uss, "rss" => sample&.rss,
          "shared_ratio" => sample&.shared_ratio&.round(4))
      end

      def generations(processes)
        processes.select { |row| row["generation"] }.group_by { |row| row["generation"] }.sort.map do |generation, rows|
          {"generation" => generation, "processes" => rows.size,
           "workers" => rows.count { |row| row["role"] == "worker" },
           "pss" => sum(rows, "pss"), "uss" => sum(rows, "uss")}
        end
      end

      def memory_h(report, processes)
        return {"sampled_at" => nil, "pss" => nil, "uss" => nil} unless report

        {"sampled_at" => JSONWriter.time(report.time), "pss" => report.total.pss, "uss" => report.total.uss,
         "processes" => report.rows.size, "workers_shared_ratio" => workers_shared_ratio(processes)}
      end

      # Σ shared / Σ RSS over the workers: how much of what they map is
      # still shared (what `refork_when shared_below:` compares).
      def workers_shared_ratio(processes)
        workers = processes.select { |row| row["role"] == "worker" && row["rss"] }
        rss = sum(workers, "rss")
        rss&.positive? ? (workers.sum { |row| row["rss"] * row["shared_ratio"] } / rss).round(4) : nil
      end

      def sum(rows, key)
        values = rows.filter_map { |row| row[key] }
        values.empty? ? nil : values.sum
      end

      def counters_h(processes)
        counters = @telemetry.counters
        retired = counters.delete(:requests_retired)
        deaths = counters.delete(:worker_deaths_by_signal)
        {"requests" => retired + processes.sum { |row| row["requests"].to_i }}
          .merge(counters.transform_keys(&:to_s))
          .merge("worker_deaths_by_signal" => {"total" => deaths, "by_signal" => @telemetry.deaths_by_signal})
      end

      def rollout_h(rollout)
        {"kind" => rollout.kind.to_s, "reason" => rollout.reason, "from_generation" => rollout.from_generation,
         "generation" => rollout.generation, "at" => JSONWriter.time(rollout.wall_time),
         "duration" => rollout.duration&.round(3), "outcome" => rollout.outcome.to_s}
      end
    end
  end
end
