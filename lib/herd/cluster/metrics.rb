# frozen_string_literal: true

module Herd
  module Cluster
    # `/metrics`: the `/stats` document in Prometheus's text exposition
    # format (version 0.0.4): one family per figure, each with its HELP and
    # TYPE lines, sizes in bytes, durations in seconds. Series are labelled
    # by role, worker number and generation, never by pid alone (a pid label
    # would make a new series at every worker replacement; it is there, but
    # next to the stable labels).
    # @api private
    class Metrics
      COUNTERS = {
        "requests" => "Requests served by every worker since the server started",
        "timeouts" => "Workers killed for a request past `timeout`",
        "reforks" => "Reforks started (a worker promoted to the next mold)",
        "reloads" => "Reloads started (HUP: a mold booted from config.ru)",
        "refork_failures" => "Reforks whose new mold failed",
        "reload_failures" => "Reloads whose new mold failed",
        "spawn_failures" => "Molds or workers that died or timed out before they were ready",
        "memory_limit_replacements" => "Workers replaced for exceeding worker_memory_limit"
      }.freeze

      PROCESS_GAUGES = {
        "pss" => ["process_pss_bytes", "Proportional set size of each process"],
        "uss" => ["process_uss_bytes", "Unique set size (private pages) of each process"],
        "shared_ratio" => ["process_shared_ratio", "Share of each process's resident pages still shared"]
      }.freeze

      # @param stats [Hash] a {Stats#to_h}
      def initialize(stats)
        @stats = stats
        @lines = []
      end

      # @return [String] ends with a newline
      def to_s
        counters
        processes
        totals
        rollouts
        @lines.join("\n") << "\n"
      end

      private

      def family(name, type, help)
        @lines << "# HELP herd_#{name} #{help.gsub("\\", "\\\\\\\\").gsub("\n", "\\n")}"
        @lines << "# TYPE herd_#{name} #{type}"
        yield
      end

      def sample(name, value, labels = {})
        return if value.nil?

        pairs = labels.compact.map { |key, label| "#{key}=\"#{escape(label.to_s)}\"" }
        @lines << "herd_#{name}#{"{#{pairs.join(",")}}" unless pairs.empty?} #{number(value)}"
      end

      def counters
        counters = @stats["counters"]
        COUNTERS.each do |key, help|
          family("#{key}_total", "counter", help) { sample("#{key}_total", counters[key]) }
        end
        family("worker_deaths_total", "counter", "Workers killed by a signal, by signal") do
          counters["worker_deaths_by_signal"]["by_signal"].sort.each do |signal, count|
            sample("worker_deaths_total", count, signal: signal)
          end
        end
      end

      def processes
        rows = @stats["processes"]
        PROCESS_GAUGES.each do |key, (name, help)|
          family(name, "gauge", help) { rows.each { |row| sample(name, row[key], process_labels(row)) } }
        end
        workers = rows.select { |row| row["role"] == "worker" }
        family("worker_requests_total", "counter", "Requests served by each worker process") do
          workers.each { |row| sample("worker_requests_total", row["requests"], process_labels(row)) }
        end
        family("worker_busy", "gauge", "1 while a worker serves a request") do
          workers.each { |row| sample("worker_busy", (row["state"] == "busy") ? 1 : 0, process_labels(row)) }
        end
        family("worker_request_age_seconds", "gauge", "Age of the request a busy worker is on") do
          workers.each { |row| sample("worker_request_age_seconds", row["request_age"], process_labels(row)) }
        end
      end

      def process_labels(row)
        {role: row["role"], worker: row["number"], generation: row["generation"], pid: row["pid"]}
      end

      def totals
        family("generation", "gauge", "The current generation (each refork or reload adds one)") do
          sample("generation", @stats["server"]["generation"])
        end
        family("generation_pss_bytes", "gauge", "Sum of PSS over the processes of each generation") do
          @stats["generations"].each { |row| sample("generation_pss_bytes", row["pss"], generation: row["generation"]) }
        end
        memory = @stats["memory"]
        family("tree_pss_bytes", "gauge", "Sum of PSS over the whole process tree (what the server costs)") do
          sample("tree_pss_bytes", memory["pss"])
        end
        family("tree_uss_bytes", "gauge", "Sum of USS over the whole process tree") do
          sample("tree_uss_bytes", memory["uss"])
        end
        family("workers_shared_ratio", "gauge", "Sum of shared over sum of RSS, across the workers") do
          sample("workers_shared_ratio", memory["workers_shared_ratio"])
        end
      end

      def rollouts
        family("last_rollout_duration_seconds", "gauge",
          "Seconds the last refork or reload took to get its mold ready") do
          %w[refork reload].each do |kind|
            last = @stats["rollouts"].find { |rollout| rollout["kind"] == kind && rollout["duration"] }
            sample("last_rollout_duration_seconds", last && last["duration"], kind: kind)
          end
        end
      end

      def escape(text)
        text.gsub("\\", "\\\\\\\\").gsub("\"", "\\\"").gsub("\n", "\\n")
      end

      def number(value)
        return value.to_s if value.is_a?(Integer)
        return "NaN" if value.nan?
        return (value.positive? ? "+Inf" : "-Inf") if value.infinite?

        value.to_s
      end
    end
  end
end
