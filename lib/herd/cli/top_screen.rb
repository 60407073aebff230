# frozen_string_literal: true

require_relative "../memory/table"

module Herd
  class CLI
    # One screen of `herd top` from a /stats document: a summary line, the
    # processes (with each busy worker's request), totals per generation,
    # and the last reforks and reloads with why.
    class TopScreen
      COLUMNS = ["ROLE", "GEN", "PID", "STATE", "REQS", "PSS", "USS", "SHARED", "REQUEST"].freeze
      ROLLOVERS_SHOWN = 5

      # @param stats [Hash] the /stats document
      # @param width [Integer, nil] terminal width; lines are cut to it
      # @param address [String] where it came from
      def initialize(stats, width: nil, address: nil)
        @stats = stats
        @width = width
        @address = address
      end

      # @return [String] ends with a newline
      def to_s
        lines = summary + [""] + processes + [""] + generations + [""] + rollouts
        lines.map { |line| (@width && line.length > @width) ? line[0, @width] : line }.join("\n") << "\n"
      end

      private

      def summary
        server = @stats.fetch("server")
        memory = @stats.fetch("memory")
        counters = @stats.fetch("counters")
        workers = @stats["processes"].count { |row| row["role"] == "worker" }
        deaths = counters.dig("worker_deaths_by_signal", "by_signal").to_h
        [
          "herd top — monitor #{server["pid"]}#{" at #{@address}" if @address}, up #{duration(server["uptime"])}, " \
            "#{server["time"]}",
          "generation #{server["generation"]}, workers #{workers}/#{server["workers_target"]}, #{server["state"]}",
          "Σ PSS #{size(memory["pss"])}   Σ USS #{size(memory["uss"])}   " \
            "workers shared #{percent(memory["workers_shared_ratio"])}" \
            "   (measured #{memory["sampled_at"] || "not yet"})",
          "requests #{counters["requests"]}   timeouts #{counters["timeouts"]}   killed by signal " \
            "#{counters.dig("worker_deaths_by_signal", "total")}" \
            "#{" (#{deaths.map { |sig, n| "#{sig} #{n}" }.join(", ")})" unless deaths.empty?}" \
            "   reforks #{counters["reforks"]}   reloads #{counters["reloads"]}" \
            "   spawn failures #{counters["spawn_failures"]}" \
            "   over memory limit #{counters["memory_limit_replacements"]}"
        ]
      end

      def processes
        rows = @stats["processes"].map do |row|
          role = (row["role"] == "worker") ? "worker #{row["number"]}" : row["role"]
          request = row["request"] ? "#{row["request"]} (#{format("%.1f", row["request_age"])}s)" : (row["title"] || "")
          [role, row["generation"], row["pid"], row["state"], row["requests"], size(row["pss"]), size(row["uss"]),
            percent(row["shared_ratio"]), request]
        end
        table(COLUMNS, rows)
      end

      def generations
        rows = @stats["generations"].map do |row|
          [row["generation"], row["processes"], row["workers"], size(row["pss"]), size(row["uss"])]
        end
        rows << ["all", @stats["processes"].size, "",
          size(@stats.dig("memory", "pss")), size(@stats.dig("memory", "uss"))]
        table(["GEN", "PROCESSES", "WORKERS", "Σ PSS", "Σ USS"], rows)
      end

      def rollouts
        shown = @stats["rollouts"].first(ROLLOVERS_SHOWN)
        return ["No refork or reload yet."] if shown.empty?

        rows = shown.map do |row|
          [row["at"], row["kind"], "#{row["from_generation"]} -> #{row["generation"]}", row["outcome"],
            row["duration"] ? "#{format("%.2f", row["duration"])}s" : "-", row["reason"]]
        end
        ["Last reforks and reloads:"] + table(["AT", "KIND", "GEN", "OUTCOME", "TOOK", "WHY"], rows)
      end

      # Left-aligned text, right-aligned numbers; the last column is free.
      def table(headers, rows)
        cells = ([headers] + rows).map { |row| row.map { |cell| cell.nil? ? "-" : cell.to_s } }
        widths = cells.transpose.map { |column| column.map(&:length).max }
        cells.map do |row|
          row.each_with_index.map do |cell, index|
            next cell if index == row.size - 1

            cell.match?(/\A([\d.]+( \w+|%)?|-)\z/) ? cell.rjust(widths[index]) : cell.ljust(widths[index])
          end.join("  ").rstrip
        end
      end

      def size(bytes)
        bytes ? Memory::Table.humanize(bytes) : "-"
      end

      def percent(ratio)
        ratio ? format("%.1f%%", ratio * 100) : "-"
      end

      def duration(seconds)
        seconds = seconds.to_i
        return "#{seconds}s" if seconds < 60
        return "#{seconds / 60}m#{seconds % 60}s" if seconds < 3600

        "#{seconds / 3600}h#{seconds % 3600 / 60}m"
      end
    end
  end
end
