# frozen_string_literal: true

# Pitchfork's memory benchmark, reproduced: Σ PSS of a whole server (every
# process) with 4 workers after `ab -c 4 -n 500`, for herd with refork_after
# [50, 100, 1000] against Pitchfork (the same), Puma fork_worker, Puma and
# Unicorn preloaded, on apps whose shared memory erodes as they serve: the
# constant-cache app, the same app reporting the cluster's memory in every
# response as Pitchfork's own example does (measured inside too), and a lazy app.
# Every process's PSS is recorded every 0.25 s through each run and drawn
# with herd plot, one picture per app.
#
#   bundle exec ruby bench/cow.rb [--reps N] [--only herd,pitchfork] [--apps constant,measuring,lazy] [--requests N] [--more N]
#     [--baseline REF]
#
# --baseline REF also runs herd as it was at git revision REF (Bench::Baseline),
# as server "herd@REF", interleaved with the others in the same run.
#
# Needs ab (apt-get update && apt-get install -y apache2-utils) and the
# optional bench group for the peers (bundle config set --local with bench &&
# bundle install); a missing peer is skipped and said so. Writes
# bench/results/cow.md, bench/results/cow.json and bench/results/cow-APP.svg.

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "optparse"
require "tmpdir"
require "herd/version"
require_relative "cow/servers"
require_relative "cow/runner"
require_relative "cow/progress"
require_relative "cow/summary"
require_relative "cow/report"
require_relative "support/baseline"
require_relative "support/plot"

command = Bench::Report.command_line($PROGRAM_NAME, ARGV) # before OptionParser empties ARGV
names = CowBench::SERVERS.map(&:name)
options = {reps: 3, requests: 500, more: 200, concurrency: 4, apps: CowBench::APPS.map(&:name), only: names,
           servers: {"constant" => names, "measuring" => names, "lazy" => names - %w[puma]}}
OptionParser.new do |opts|
  opts.banner = "usage: ruby bench/cow.rb [options]"
  opts.on("--reps N", Integer, "repetitions per server and app (default 3, at least 3)") { |n| options[:reps] = [n, 3].max }
  opts.on("--only LIST", Array, "only these servers, for every app (#{names.join(",")})") { |list| options[:only] = list }
  opts.on("--apps LIST", Array, "apps (#{options[:apps].join(",")})") { |list| options[:apps] = list }
  options[:servers].each_key do |app|
    opts.on("--#{app}-servers LIST", Array, "servers for the #{app} app (default #{options[:servers][app].join(",")})") do |list|
      options[:servers][app] = list
    end
  end
  opts.on("--requests N", Integer, "ab -n of the warm-up (default 500)") { |n| options[:requests] = n }
  opts.on("--more N", Integer, "then N more requests, settle and measure again (default 200, 0: off)") { |n| options[:more] = n }
  opts.on("--baseline REF", "also run herd at this git revision, as herd@REF") { |ref| options[:baseline] = ref }
  opts.on("--report-only JSON", "rewrite the results from an earlier run's bench/results/cow.json") { |path| options[:from] = path }
end.parse!

# Σ PSS over time, one picture per app (bench/results/cow-APP.svg): a panel
# per server, its first repetition, in the order of the tables.
# @return [Hash] app name -> the SVG's file name, for the apps whose runs were recorded
def plots(runs, apps, servers)
  order = servers.map(&:name)
  pictures = apps.filter_map do |app|
    mine = runs.select { |run| run[:app] == app.name }.sort_by { |run| order.index(run[:server]) || order.size }
    path = Bench::Plot.write(mine, "cow-#{app.name}", title: "bench/cow, #{app.name} app: Σ PSS over time, by role (herd plot)",
      key: :server, order: :rep, label: CowBench::Report.method(:panel_name))
    [app.name, File.basename(path)] if path
  end
  pictures.to_h
end

# Tables from the measurements; both files, or the measurements alone when
# the tables fail (so that --report-only can try again).
def publish(env:, options:, runs:, floors:)
  all = CowBench.servers(options[:baseline])
  servers = all.select { |server| runs.any? { |run| run[:server] == server.name } }
  apps = CowBench::APPS.select { |app| floors.any? { |floor| floor[:app] == app.name } }
  data = {environment: env, options: options, floors: floors, runs: runs}
  summary = CowBench::Summary.new(runs: runs, floors: floors, servers: servers, apps: apps)
  report = CowBench::Report.new(env: env, summary: summary, apps: apps, options: options, plots: plots(runs, apps, all))
  puts report.markdown
  paths = Bench::Report.write("cow", markdown: report.markdown, data: data.merge(summary: summary.to_h), line_depth: 3)
  warn "wrote #{paths.join(", ")}"
rescue => e
  path = File.join(Dir.tmpdir, "bench-cow-#{Process.pid}.json")
  File.write(path, JSON.generate(data))
  raise e.exception("#{e.message}\nmeasurements kept in #{path}: ruby bench/cow.rb --report-only #{path}")
end

if options[:from]
  data = JSON.parse(File.read(options[:from]), symbolize_names: true)
  publish(env: data[:environment], options: data[:options], runs: data[:runs], floors: data[:floors])
  exit
end

ab_version = CowBench::Ab.version
abort "bench/cow: #{CowBench::Ab::INSTALL_HINT}" unless ab_version
apps = CowBench::APPS.select { |app| options[:apps].include?(app.name) }
abort "bench/cow: no such server or app in --only/--apps" if apps.empty?
baseline = options[:baseline] && Bench::Baseline.extract(options[:baseline], bench: "bench/cow")
if baseline # on every app, whatever --only says
  options[:only] += [baseline.name]
  options[:servers].transform_values! { |list| list + [baseline.name] }
end
servers = CowBench.servers(options[:baseline], baseline: baseline).select do |server|
  options[:only].include?(server.name) && apps.any? { |app| options[:servers][app.name].include?(server.name) }
end
abort "bench/cow: no such server or app in --only/--apps" if servers.empty?
servers.each { |server| warn "#{server.name}: #{server.missing ? "skipped: #{server.missing}" : server.version}" }

ab = CowBench::Ab.new(concurrency: options[:concurrency])
env = Bench::Report.environment(command).merge(
  ab: ab_version, ab_command: ab.command("URL", options[:requests]).join(" "), more: options[:more],
  rack: Gem.loaded_specs["rack"]&.version&.to_s, servers: servers.to_h { |s| [s.name, s.version || "skipped: #{s.missing}"] },
  loadavg_start: Bench::Report.loadavg
)
started = Bench::Clock.now
progress = CowBench::Progress.new
results = Dir.mktmpdir("bench-cow") do |logs|
  apps.map do |app|
    chosen = servers.select { |server| options[:servers][app.name].include?(server.name) }
    CowBench::Runner.new(servers: chosen.reject(&:missing), apps: [app], reps: options[:reps], requests: options[:requests],
      more: options[:more], ab: ab, logs: logs, progress: progress).call
  end
ensure
  baseline&.remove
end
env[:loadavg_end] = Bench::Report.loadavg
env[:seconds] = (Bench::Clock.now - started).round(1)
publish(env: env, options: options, runs: results.flat_map { |result| result[:runs] },
  floors: results.flat_map { |result| result[:floors] })
