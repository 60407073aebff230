# frozen_string_literal: true

require "json"
require "open3"
require "rbconfig"
require_relative "support"

module PoolBench
  # Benchmark 4: memory of a pool over a preloaded dataset. Each run is a
  # fresh Ruby (bench/pool/memory_worker.rb), so no run inherits a heap that
  # an earlier one aged or compacted.
  class Memory
    WORKER = File.expand_path("memory_worker.rb", __dir__)
    VARIANTS = ["herd", "herd prepare_heap: {compact: true}", "herd prepare_heap: {seal_malloc: false}", "herd prepare_heap: false",
      "Parallel in_processes"].freeze
    WORKLOADS = {
      "read" => "per record: `\"\#{r[:id]}:\#{r[:name].bytesize}:\#{r[:tags].size}\"`",
      "join" => "the same with `r[:tags].join(\",\")` (Array#join writes each joined string's coderange bits back)"
    }.freeze
    TARGET = 1.2
    HEADLINE = 0.5 # the sample the target is judged on: half the items done

    def initialize(reps:)
      @reps = reps
    end

    def call
      return skipped("Herd::Memory needs Linux /proc/PID/smaps_rollup") unless File.readable?("/proc/self/smaps_rollup")

      runs = Hash.new { |hash, key| hash[key] = [] }
      @reps.times do |rep|
        WORKLOADS.each_key do |workload|
          VARIANTS.each do |variant|
            next if runs[[workload, variant]].first&.key?(:unavailable)

            runs[[workload, variant]] << run(variant, workload)
            warn format("  memory rep %d/%d: %-5s %-36s %s", rep + 1, @reps, workload, variant, brief(runs[[workload, variant]].last))
          end
        end
      end
      rows = runs.to_h { |(workload, variant), list| [[workload, variant], summarize(list)] }
      verdicts = judge(rows)
      markdown = render(rows, verdicts, runs.values.flatten.find { |r| r[:records] })
      puts markdown
      {markdown: markdown, data: {reps: @reps, target_ratio: TARGET, judged_at: HEADLINE, verdicts: verdicts,
                                  rows: rows.map { |(workload, variant), row| {workload: workload, variant: variant, **row} },
                                  runs: runs.map { |(workload, variant), list| {workload: workload, variant: variant, runs: list} }}}
    end

    private

    def run(variant, workload)
      out, err, status = Open3.capture3(RbConfig.ruby, WORKER, variant, workload)
      raise "memory worker #{variant} #{workload} failed: #{status.inspect}\n#{err}" unless status.success?

      warn err unless err.empty?
      JSON.parse(out.lines.last, symbolize_names: true)
    end

    def brief(result)
      return "skipped: #{result[:unavailable]}" if result[:unavailable]

      format("ratio at 50%%: %.2f", ratio(result, HEADLINE))
    end

    def ratio(result, fraction)
      sample = result[:samples].find { |s| s[:fraction] == fraction }
      sample[:total_pss].fdiv(result[:parent_before][:pss])
    end

    def summarize(list)
      return {unavailable: list.first[:unavailable]} if list.first[:unavailable]

      at = ->(result) { result[:samples].find { |s| s[:fraction] == HEADLINE } }
      workers = list.flat_map { |result| at.call(result)[:processes].select { |p| p[:role] == "worker" } }
      {
        parent_pss_before: Bench::Stats.summary(list.map { |r| r[:parent_before][:pss] }),
        free_slots_before: Bench::Stats.median(list.map { |r| r[:parent_before][:heap_free_slots] }),
        live_slots_before: Bench::Stats.median(list.map { |r| r[:parent_before][:heap_live_slots] }),
        total_pss: Bench::Stats.summary(list.map { |r| at.call(r)[:total_pss] }),
        ratio: Bench::Stats.summary(list.map { |r| ratio(r, HEADLINE) }),
        max_ratio: Bench::Stats.median(list.map { |r| r[:samples].map { |s| ratio(r, s[:fraction]) }.max }),
        worker_private_dirty: Bench::Stats.median(workers.map { |p| p[:private_dirty] }),
        processes: Bench::Stats.median(list.map { |r| at.call(r)[:processes].size }),
        wall: Bench::Stats.median(list.map { |r| r[:wall] })
      }
    end

    def judge(rows)
      WORKLOADS.keys.flat_map do |workload|
        VARIANTS.grep(/\Aherd/).grep_v(/false/).map do |variant|
          row = rows[[workload, variant]]
          met = row[:ratio][:median] <= TARGET
          {workload: workload, variant: variant, ratio: row[:ratio][:median], met: met,
           text: format("%s, %s: %.2fx. Target <= %.1fx: %s.", workload, variant, row[:ratio][:median], TARGET, met ? "met" : "NOT met")}
        end
      end
    end

    def render(rows, verdicts, sample_run)
      table = PoolBench.table(
        ["workload", "variant", "parent PSS before, MB", "Σ PSS at 50%, MB", "Σ PSS / parent before: median (min–max)",
          "worst of 25/50/75/95%", "worker Private_Dirty at 50%, MB", "processes", "map s"],
        rows.map do |(workload, variant), row|
          next [workload, variant, "skipped: #{row[:unavailable]}", *Array.new(6, "")] if row[:unavailable]

          r = row[:ratio]
          [workload, variant, PoolBench.mb(row[:parent_pss_before][:median]), PoolBench.mb(row[:total_pss][:median]),
            Bench::Stats.range(r, "%.2f"), format("%.2f", row[:max_ratio]),
            PoolBench.mb(row[:worker_private_dirty]), row[:processes], format("%.2f", row[:wall])]
        end
      )
      <<~MD
        ## 4. Memory: Σ PSS of parent + workers vs the parent alone

        #{setup(rows, sample_run)}

        #{table}
        #{verdicts.map { |v| "- #{v[:text]}" }.join("\n")}
      MD
    end

    def setup(rows, run)
      known = rows.values.find { |row| row[:parent_pss_before] }
      return "no run" unless run && known

      <<~TEXT.strip
        The parent builds #{run[:records]} records (`{id:, name: "record \#{i} " + "x" * 200, tags: [2 short strings]}`),
        ~#{PoolBench.mb(known[:parent_pss_before][:median])} MB PSS with #{known[:live_slots_before]} live object slots and
        #{known[:free_slots_before]} free ones left between them by the build's garbage; runs `GC.start`; reads its own PSS.
        Then #{run[:items]} items (slices of #{run[:records] / run[:items]} records) go to #{run[:workers]} worker processes,
        and the parent's `finish:` callback reads Σ PSS of the process tree (`Herd::Memory.tree(Process.pid)`) after 25,
        50, 75 and 95% of the items; the target is judged at 50%. Each run in a fresh Ruby, #{@reps} runs per row.
        Workloads:
        #{WORKLOADS.map { |name, text| "- #{name}: #{text}" }.join("\n")}
      TEXT
    end

    def skipped(reason)
      markdown = "## 4. Memory\n\nskipped: #{reason}\n"
      puts markdown
      {markdown: markdown, data: {skipped: reason}}
    end
  end
end
