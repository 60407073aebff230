# frozen_string_literal: true

# What a refork costs: `herd serve` on the Rails app of test/apps (4
# workers, no refork schedule) under bench/rails's load, a USR2 refork after
# a warm-up and a steady phase, and the throughput, p99 and Σ PSS of the
# window that holds it against the steady phase; Pitchfork's USR2 refork on
# the same app for the peak.
#
#   test/apps/setup && BUNDLE_GEMFILE=bench/rails/Gemfile bundle install   # once
#   bundle exec ruby bench/refork.rb [--rounds N] [--herd-options "-;prepare_heap compact: true"] [--no-pitchfork]
#     [--app rails8]   (the Rails 8.1 app, Ruby >= 3.2: bench/rails8/Gemfile)
#   bundle exec rake bench:refork
#
# Writes bench/results/refork.md and bench/results/refork.json.

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "optparse"
require_relative "refork/setups"
require_relative "rails/rounds"
require_relative "reload/driver"
require_relative "refork/report"

command = Bench::Report.command_line($PROGRAM_NAME, ARGV)
options = {rounds: 2, interval: 0.25, workers: 4, steady: 8.0, after: 6.0, warm: 25.0, herd_options: [nil], pitchfork: true,
           name: "refork"}
OptionParser.new do |opts|
  opts.banner = "usage: ruby bench/refork.rb [options]"
  opts.on("--rounds N", Integer, "reforks per setup (default 2)") { |n| options[:rounds] = n }
  opts.on("--interval S", Float, "seconds between Σ PSS samples (default 0.25)") { |s| options[:interval] = s }
  opts.on("--workers N", Integer, "workers (default 4)") { |n| options[:workers] = n }
  opts.on("--warm S", Float, "seconds of load before the steady phase (default 25)") { |s| options[:warm] = s }
  opts.on("--steady S", Float, "seconds of steady load measured before the signal (default 8)") { |s| options[:steady] = s }
  opts.on("--after S", Float, "seconds of load after the roll (default 6, at least 5)") { |s| options[:after] = [s, 5.0].max }
  opts.on("--herd-options LIST", "herd settings of each setup, ';'-separated setups, '-' for the defaults") do |list|
    options[:herd_options] = ReloadBench::Driver.herd_options(list)
  end
  opts.on("--no-pitchfork", "herd only") { options[:pitchfork] = false }
  opts.on("--app APP", "#{RailsBench::APPS.keys.join(" or ")} (default rails7, the app of the earlier results)") do |app|
    RailsBench.choose(app: app, malloc: "glibc")
  end
  opts.on("--name NAME", "results file name under bench/results (default refork)") { |name| options[:name] = name }
  opts.on("--report-only JSON", "rewrite the results from an earlier run's JSON") { |path| options[:from] = path }
end.parse!

notes = Bench::Report.notes(File.join(__dir__, "refork", "NOTES.md"), name: options[:name], default: "refork")
if options[:from]
  ReloadBench::Driver.report_only(options[:from], options[:name], ReforkBench::Report, notes)
  exit
end

setups = ReforkBench.setups(options[:herd_options], pitchfork: options[:pitchfork])
env, runs = RailsBench.rounds("refork", command, setups, options[:rounds]) do |setup, round, template, work|
  run = ReloadBench.run(setup, template: template, work: work, round: round, workers: options[:workers],
    interval: options[:interval], steady: options[:steady], after: options[:after], warm: options[:warm],
    warm_generation: 0, new_code: false)
  warn(if run[:error]
    "round #{round} #{run[:server]}: ERROR #{run[:error]}"
  else
    t = run[:throughput]
    format("round %d %-34s steady %.0f req/s, 5 s window %.2fx, roll %.2fx (%.1f s), p99 %s -> %s ms, " \
      "Σ PSS %.0f -> peak %.0f MiB, failed %d", round, run[:server], t[:steady], t[:window5_ratio], t[:roll_ratio],
      run[:times][:roll_seconds], run.dig(:latency_steady_ms, :p99), run.dig(:latency_roll_ms, :p99),
      run[:memory][:steady_median], run[:memory][:peak], run[:failed])
  end)
  run
end
ReloadBench::Driver.publish(ReforkBench::Report, notes, env, runs, options)
