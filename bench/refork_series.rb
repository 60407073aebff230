# frozen_string_literal: true

# What a refork costs, read off many reforks: `herd serve` on the Rails app
# of test/apps (4 workers, no refork schedule) under bench/rails's load, a
# USR2 every ~10 s, and each 5 s window from the signal against the 5 s
# before it and the 5 s after it (bench/refork/series.rb says why);
# Pitchfork's USR2 refork the same way, its rounds interleaved with herd's.
#
#   test/apps/setup && BUNDLE_GEMFILE=bench/rails/Gemfile bundle install   # once
#   bundle exec ruby bench/refork_series.rb [--reforks N] [--rounds N] [--herd-options "-;rollout_max_surge 0"] [--no-pitchfork]
#
# Writes bench/results/refork-series.md and .json (--name NAME: NAME.md).

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "optparse"
require_relative "refork/series"
require_relative "rails/rounds"
require_relative "reload/driver"

command = Bench::Report.command_line($PROGRAM_NAME, ARGV)
options = {reforks: 10, rounds: 2, workers: 4, warm: 25.0, herd_options: [nil], pitchfork: true, name: "refork-series"}
OptionParser.new do |opts|
  opts.banner = "usage: ruby bench/refork_series.rb [options]"
  opts.on("--reforks N", Integer, "USR2 reforks per server run (default 10)") { |n| options[:reforks] = [n, 1].max }
  opts.on("--rounds N", Integer, "server runs per setup (default 2)") { |n| options[:rounds] = [n, 1].max }
  opts.on("--workers N", Integer, "workers (default 4)") { |n| options[:workers] = n }
  opts.on("--warm S", Float, "seconds of load before the first refork (default 25)") { |s| options[:warm] = s }
  opts.on("--herd-options LIST", "herd settings of each setup, ';'-separated setups, '-' for the defaults") do |list|
    options[:herd_options] = ReloadBench::Driver.herd_options(list)
  end
  opts.on("--no-pitchfork", "herd only") { options[:pitchfork] = false }
  opts.on("--name NAME", "results file name under bench/results (default refork-series)") { |name| options[:name] = name }
end.parse!

THRESHOLD = 0.9 # issue #19: a window that holds a refork serves >= 0.9x

setups = ReforkBench.setups(options[:herd_options], pitchfork: options[:pitchfork])
env, runs = RailsBench.rounds("refork_series", command, setups, options[:rounds]) do |setup, round, template, work|
  run = ReforkBench::Series.run(setup, template: template, work: work, round: round, workers: options[:workers],
    reforks: options[:reforks], warm: options[:warm])
  if run[:error]
    warn "round #{round} #{run[:server]}: ERROR #{run[:error]}"
  else
    run[:reforks] = ReforkBench::Series.reforks(run[:rolls], run[:records])
    run[:failed] = RailsBench.failures(run[:records]).size
    warn format("round %d %-28s window / mean of before and after: %s; failed %d", round, run[:server],
      run[:reforks].map { |r| format("%.2f", r[:ratio]) }.join(" "), run[:failed])
  end
  run.except(:records, :backtrace).merge(requests: run[:records]&.size)
end

# Mean with a 95% interval (Student's t for the sample's size).
T95 = {1 => 12.71, 2 => 4.30, 3 => 3.18, 4 => 2.78, 5 => 2.57, 6 => 2.45, 7 => 2.36, 8 => 2.31, 9 => 2.26, 10 => 2.23,
       15 => 2.13, 20 => 2.09, 30 => 2.04, 60 => 2.00}.freeze
def mean_interval(values)
  n = values.size
  mean = values.sum / n
  return [mean, nil] if n < 2

  sd = Math.sqrt(values.sum { |v| (v - mean)**2 } / (n - 1))
  t = T95.select { |df, _| df <= n - 1 }.max_by(&:first).last
  [mean, t * sd / Math.sqrt(n)]
end

summary = runs.reject { |run| run[:error] }.group_by { |run| run[:server] }.map do |server, server_runs|
  reforks = server_runs.flat_map { |run| run[:reforks] }
  ratios = reforks.map { |r| r[:ratio] }
  mean, half = mean_interval(ratios)
  p99 = reforks.filter_map { |r| r[:p99_roll_ms] && r[:p99_before_ms] && r[:p99_roll_ms] / r[:p99_before_ms] }
  {server: server, reforks: reforks.size, mean: mean, half: half, median: Bench::Stats.median(ratios), min: ratios.min,
   max: ratios.max, met: ratios.count { |r| r >= THRESHOLD }, p99_median: Bench::Stats.median(p99), p99_max: p99.max,
   roll_median: Bench::Stats.median(reforks.map { |r| r[:roll_seconds] }), failed: server_runs.sum { |run| run[:failed] },
   lost: mean_interval(reforks.map { |r| r[:lost_seconds] })}
end

# "mean (low–high)", or the mean alone for a single sample.
def interval(mean, half, digits = 2)
  value = ->(x) { format("%.#{digits}f", x) }
  half ? "#{value[mean]} (#{value[mean - half]}–#{value[mean + half]})" : value[mean]
end

table = Bench::Report.markdown_table(
  ["server", "reforks", "window / mean of before and after: mean (95% interval)", "median (min–max)",
    "windows ≥ #{THRESHOLD}x", "capacity lost per refork (s): mean (95% interval)", "p99 in the roll / p99 before: median (max)",
    "roll (s), median", "failed requests"],
  summary.map do |s|
    [s[:server], s[:reforks], interval(s[:mean], s[:half], 3),
      format("%.3f (%.2f–%.2f)", s[:median], s[:min], s[:max]), "#{s[:met]} of #{s[:reforks]}", interval(*s[:lost]),
      format("%.2fx (%.2fx)", s[:p99_median], s[:p99_max]), format("%.1f", s[:roll_median]), s[:failed]]
  end
)
per_refork = runs.map do |run|
  next "- #{run[:server]}, round #{run[:round]}: #{run[:error]}" if run[:error]

  "- #{run[:server]}, round #{run[:round]} (#{run[:requests]} requests): " +
    run[:reforks].map { |r| format("%.2f (%.0f / %.0f, %.0f req/s; roll %.1f s)", r[:ratio], r[:window], r[:before], r[:after], r[:roll_seconds]) }.join(", ")
end

markdown = <<~MD
  # bench/refork_series: many reforks in one run, each against its neighbours

  #{Bench::Report.environment_markdown(env)}- load average at end: #{env[:loadavg_end]}; #{env[:seconds]} s in all

  The Rails app of bench/rails (test/apps' scaffold, SQLite, production), #{options[:workers]} workers, bench/rails's
  4 clients (a new connection per request) from boot to the end, no refork schedule. After #{options[:warm]} s of load
  the driver sends **USR2** to the server's pid #{options[:reforks]} times, one refork at a time: 5 s of load, the
  signal, the roll, and 5 s of load after the later of the window's end and a second after the roll, which are
  also the 5 s before the next signal. Each refork's window is the 5 s from its signal; it is divided by the mean
  of the 5 s before the signal and the 5 s after the window. #{options[:rounds]} server run(s) per setup, setups
  interleaved. p99 in the roll: requests sent from the signal to the roll's end, against those sent in the 5 s before.
  Capacity lost: the responses missing from the signal to the start of the after phase, against the mean rate of
  the phases before and after, in seconds of that rate; unlike the window, it counts a roll longer than 5 s whole
  (`rollout_min_ready` spreads the same cost over a longer roll).

  #{table}
  Issue #19 asks for a window that holds a refork to serve at least #{THRESHOLD}x the steady throughput. The
  interval is that of the mean over every refork of the setup: what one refork costs on average, with this
  host's drift from one 5 s phase to the next as the noise around it.

  Each refork: window / mean of before and after (req/s in the window / before / after; the roll):

  #{per_refork.join("\n")}
MD
paths = Bench::Report.write(options[:name], markdown: markdown, data: {environment: env, options: options, summary: summary, runs: runs})
warn "wrote #{paths.join(" and ")}"
