# frozen_string_literal: true

# Memory during a reload: `herd serve` on the Rails app of test/apps (4
# workers, refork_after [50, 100, 1000]) under the load of bench/rails (4
# clients browsing the scaffold), steady state, then the app's response
# changed (a RELEASE file its initializer reads at boot, answered in an
# x-release header) and `kill -HUP` to the monitor: Σ PSS of the tree every
# 0.25 s through the roll against steady + the new mold's own PSS + 10%;
# failed requests; every response after the roll from the new code.
#
#   test/apps/setup && BUNDLE_GEMFILE=bench/rails/Gemfile bundle install   # once
#   bundle exec ruby bench/reload.rb [--rounds N] [--herd-options "refork_after false"] [--puma]
#   bundle exec rake bench:reload
#
# --puma adds Puma fork_worker's phased restart (USR1) on the same app for
# comparison. Writes bench/results/reload.md and bench/results/reload.json.

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "optparse"
require_relative "reload/run"
require_relative "rails/rounds"
require_relative "reload/driver"
require_relative "reload/report"

command = Bench::Report.command_line($PROGRAM_NAME, ARGV)
options = {rounds: 2, interval: 0.25, workers: 4, steady: 5.0, after: 5.0, warm: 20.0, warm_generation: 3,
           herd_options: [nil], puma: false, name: "reload"}
OptionParser.new do |opts|
  opts.banner = "usage: ruby bench/reload.rb [options]"
  opts.on("--rounds N", Integer, "reloads per setup (default 2)") { |n| options[:rounds] = n }
  opts.on("--interval S", Float, "seconds between Σ PSS samples (default 0.25)") { |s| options[:interval] = s }
  opts.on("--workers N", Integer, "workers (default 4)") { |n| options[:workers] = n }
  opts.on("--steady S", Float, "seconds of steady load measured before the signal (default 5)") { |s| options[:steady] = s }
  opts.on("--after S", Float, "seconds of load after the roll (default 5)") { |s| options[:after] = s }
  opts.on("--herd-options LIST", "herd settings of each setup, ';'-separated setups, '-' for the default " \
    "(e.g. '-;refork_after false'; 'none' with --puma for Puma alone)") { |list|
    options[:herd_options] = if list == "none"
      []
    else
      ReloadBench::Driver.herd_options(list)
    end
  }
  opts.on("--puma", "also Puma fork_worker's phased restart (USR1)") { options[:puma] = true }
  opts.on("--name NAME", "results file name under bench/results (default reload)") { |name| options[:name] = name }
  opts.on("--report-only JSON", "rewrite the results from an earlier run's JSON") { |path| options[:from] = path }
end.parse!

notes = Bench::Report.notes(File.join(__dir__, "reload", "NOTES.md"), name: options[:name], default: "reload")
if options[:from]
  ReloadBench::Driver.report_only(options[:from], options[:name], ReloadBench::Report, notes)
  exit
end

setups = options[:herd_options].map { |herd_options| ReloadBench.reloaders(herd_options).first }
setups << ReloadBench.reloaders(nil).last if options[:puma]
env, runs = RailsBench.rounds("reload", command, setups, options[:rounds]) do |setup, round, template, work|
  run = ReloadBench.run(setup, template: template, work: work, round: round, workers: options[:workers],
    interval: options[:interval], steady: options[:steady], after: options[:after], warm: options[:warm],
    warm_generation: options[:warm_generation])
  m = run[:memory]
  warn(if run[:error]
    "round #{round} #{run[:server]}: ERROR #{run[:error]}"
  else
    format("round %d %-20s steady %.1f, mold %.1f, bound %.1f, peak %.1f (%s), failed %d, after roll %s",
      round, run[:server], m[:steady_median], m[:new_mold][:pss], m[:bound], m[:peak], m[:pass] ? "pass" : "FAIL",
      run[:failed], run[:responses][:after_roll].inspect)
  end)
  run
end
ReloadBench::Driver.publish(ReloadBench::Report, notes, env, runs, options)
