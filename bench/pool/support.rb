# frozen_string_literal: true

require_relative "../support/clock"
require_relative "../support/report"
require_relative "../support/stats"

module PoolBench
  MB = 1024.0 * 1024
  INSTALL_HINT = "bundle config set --local with bench && bundle install"

  module_function

  # @return [String, nil] why the parallel gem cannot be used, nil when it can
  def parallel_missing
    return @parallel_missing if defined?(@parallel_missing)

    require "parallel"
    @parallel_missing = nil
  rescue LoadError => e
    @parallel_missing = "parallel gem not installed (#{e.message}); #{INSTALL_HINT}"
  end

  # Runs every variant `reps` times, interleaved (variant A, B, C, then again)
  # so a slow patch of the machine does not land on one variant only, and
  # each round starts one variant further on (B, C, A; then C, A, B): in a
  # fixed order the variant after the sequential run always ran in that
  # run's wake (on the 2-vCPU VM of 2026-11-26 a round's speed swung by
  # +-25%), so rotated, every variant holds every place as often.
  # @param variants [Array<Array(String, #call)>] name and a callable returning anything
  # @return [Hash{String => Array<Float>}] seconds per repetition
  # @param quiet [Boolean] one line per round instead of one per run
  def repeat(variants, reps, label, quiet: false)
    times = variants.to_h { |name, _| [name, []] }
    reps.times do |rep|
      variants.rotate(rep).each do |name, run|
        times[name] << Bench::Clock.seconds { run.call }
        warn format("  %s rep %d/%d: %-40s %.3f s", label, rep + 1, reps, name, times[name].last) unless quiet
      end
      warn format("  %s rep %d/%d", label, rep + 1, reps) if quiet && ((rep + 1) % 10).zero?
    end
    times
  end

  def seconds(stat)
    Bench::Stats.range(stat, "%.3f")
  end

  def table(headers, rows)
    Bench::Report.markdown_table(headers, rows)
  end

  # @param per_cpu [Hash{Integer => Float}, nil] seconds per item on each CPU alone
  def per_cpu_line(per_cpu)
    return "Per-CPU speed not measured (taskset(1) missing)." unless per_cpu

    fastest = per_cpu.values.min
    "One item on each CPU alone (pinned with taskset): " +
      per_cpu.map { |cpu, seconds| format("CPU %d %.1f ms (%.2fx the fastest)", cpu, seconds * 1000, seconds / fastest) }.join(", ") +
      format(". Workers on all of them together can be at most %.2fx as fast as one on the fastest, whoever forks them.",
        per_cpu.values.sum { |seconds| fastest / seconds })
  end

  def mb(bytes)
    format("%.1f", bytes / MB)
  end
end
