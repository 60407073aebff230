# frozen_string_literal: true

# herd serve against Pitchfork, Unicorn and Puma, 2 workers each, under wrk:
# requests/s and p50/p99 latency for a hello-world app and a small realistic
# one (bench/http/shop.ru), each server started afresh per repetition.
#
#   bundle exec ruby bench/http.rb [--reps N] [--duration S] [--only herd,puma] [--apps hello,shop] [--baseline REF]
#
# --baseline REF also runs herd as it was at git revision REF (its lib/ and
# exe/, extracted with git archive), as server "herd@REF", in the same run:
# a change to the hot path is measured against what it changes.
#
# Needs wrk (apt-get install wrk) and the optional bench group for the peers
# (bundle config set --local with bench && bundle install); a missing peer is
# skipped and said so. Writes bench/results/http.md and bench/results/http.json.

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "optparse"
require "tmpdir"
require "herd/version"
require_relative "http/servers"
require_relative "http/runner"
require_relative "http/summary"
require_relative "support/baseline"

command = Bench::Report.command_line($PROGRAM_NAME, ARGV) # before OptionParser empties ARGV
options = {reps: 3, duration: 10, warmup: 2, threads: 2, connections: 8, max_other_cpu: 0.25,
           only: HttpBench::SERVERS.map(&:name), apps: HttpBench::APPS.map(&:name)}
OptionParser.new do |opts|
  opts.banner = "usage: ruby bench/http.rb [options]"
  opts.on("--reps N", Integer, "repetitions per server and app (default 3, at least 3)") { |n| options[:reps] = [n, 3].max }
  opts.on("--duration SECONDS", Integer, "each measured wrk run (default 10)") { |s| options[:duration] = s }
  opts.on("--warmup SECONDS", Integer, "the wrk run before each measurement (default 2)") { |s| options[:warmup] = s }
  opts.on("--connections N", Integer, "wrk -c (default 8)") { |n| options[:connections] = n }
  opts.on("--max-other-cpu CORES", Float, "redo a run (twice at most) when other processes used more (default 0.25)") do |cores|
    options[:max_other_cpu] = cores
  end
  opts.on("--only LIST", Array, "servers (#{options[:only].join(",")})") { |list| options[:only] = list }
  opts.on("--apps LIST", Array, "apps (#{options[:apps].join(",")})") { |list| options[:apps] = list }
  opts.on("--baseline REF", "also run herd at this git revision, as herd@REF") { |ref| options[:baseline] = ref }
end.parse!

wrk_version = HttpBench::Wrk.version
abort "bench/http: #{HttpBench::Wrk::INSTALL_HINT}" unless wrk_version
servers = HttpBench::SERVERS.select { |server| options[:only].include?(server.name) }
baseline = options[:baseline] && Bench::Baseline.extract(options[:baseline], bench: "bench/http")
servers.insert(1, HttpBench.baseline_server(baseline)) if baseline
apps = HttpBench::APPS.select { |app| options[:apps].include?(app.name) }
abort "bench/http: no such server or app in --only/--apps" if servers.empty? || apps.empty?
servers.each { |server| warn "#{server.name}: #{server.missing ? "skipped: #{server.missing}" : server.version}" }

wrk = HttpBench::Wrk.new(threads: options[:threads], connections: options[:connections], duration: options[:duration])
env = Bench::Report.environment(command).merge(
  wrk: wrk_version, wrk_command: wrk.command.join(" "), warmup: "#{wrk.command("URL", duration: options[:warmup]).join(" ")} (discarded)",
  rack: Gem.loaded_specs["rack"]&.version&.to_s, servers: servers.to_h { |s| [s.name, s.version || "skipped: #{s.missing}"] },
  loadavg_start: Bench::Report.loadavg
)
started = Bench::Clock.now
measurements = Dir.mktmpdir("bench-http") do |logs|
  HttpBench::Runner.new(servers: servers.reject(&:missing), apps: apps, reps: options[:reps], wrk: wrk,
    warmup: options[:warmup], logs: logs, max_other_cpu: options[:max_other_cpu]).call
end
env[:loadavg_end] = Bench::Report.loadavg
env[:seconds] = (Bench::Clock.now - started).round(1)
others = measurements.filter_map { |m| m[:other_cpu] }
env[:redone] = measurements.sum { |m| m[:disturbed_attempts].size }
env[:other_cpu] = others.empty? ? "n/a" : format("median %.2f, max %.2f", Bench::Stats.median(others), others.max)
summary = HttpBench::Summary.new(measurements, servers: servers, apps: apps)

markdown = <<~MD
  # HTTP: herd serve vs Pitchfork, Unicorn and Puma

  #{Bench::Report.environment_markdown(env)}- servers: #{env[:servers].map { |name, version| "#{name} #{version}" }.join(", ")}; rack #{env[:rack]}
  - wrk #{env[:wrk]}: `#{env[:wrk_command]}`, after a warm-up `#{env[:warmup]}`
  - load average (1/5/15 min) at start: #{env[:loadavg_start]}, at end: #{env[:loadavg_end]} (the benchmark itself
    keeps ~4 threads runnable: 2 workers, 2 wrk threads)
  - CPU used by other processes during the measured runs, in cores: #{env[:other_cpu]} (per run in the last
    table); runs above #{options[:max_other_cpu]} were done again (#{env[:redone]} redone; twice at most, #{HttpBench::Runner::RETRY_BUDGET} in all)
  - whole run: #{env[:seconds]} s

  2 worker processes each, one request at a time per worker (Puma: `workers 2; threads 1, 1`), app
  preloaded, `RACK_ENV=production`, everything on 127.0.0.1 with wrk on the same 2 cores. Each server
  is started afresh for every repetition, warmed, measured, and stopped; servers are interleaved and
  their order rotates. Figures are medians over #{options[:reps]} repetitions with min–max. "CPU µs/req"
  is the user + system CPU of the server's processes during the measured run divided by the requests
  served: workers, then the rest (master/monitor, mold). "keep-alive": whether the server kept the
  connection open (the others answer `Connection: close`, so wrk reconnects for every request).

  #{summary.markdown}
  #{summary.anomalies_markdown}
  ### Every repetition

  #{summary.raw_markdown}
MD
paths = Bench::Report.write("http", markdown: markdown,
  data: {environment: env, summary: summary.data, targets: summary.targets, hot_path_targets: summary.hot_path_targets,
         measurements: measurements})
baseline&.remove
warn "wrote #{paths.join(" and ")}"
