# frozen_string_literal: true

# Two HTTP servers measured in alternation, for a difference smaller than
# the machine's drift. bench/http.rb starts each server afresh per
# repetition and compares medians over minutes, during which the 2-vCPU VM
# herd is benchmarked on drifts by up to 1.5x; here both servers run side by
# side (idle when not measured), wrk loads one, then the other, for a few
# seconds each, the order flipped every pair, and what is reported is the
# median of the per-pair ratios. This is how the hot-path figures of issue
# #19 were taken (docs/HTTP.md, "The hot path").
#
#   bundle exec ruby bench/http_paired.rb [--a herd] [--b unicorn] [--baseline REF]
#     [--app hello] [--pairs 12] [--duration 3] [--name NAME]
#
# --b herd@REF (with --baseline REF) compares herd with itself at a git
# revision. CPU per request is the user + system CPU of all of a server's
# processes during its run over the requests it served. Writes
# bench/results/http-paired-A-vs-B-APP.md and .json (--name NAME instead).

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "optparse"
require "tmpdir"
require "herd/version"
require_relative "http/servers"
require_relative "http/runner"
require_relative "support/baseline"

command = Bench::Report.command_line($PROGRAM_NAME, ARGV)
options = {a: "herd", b: "unicorn", app: "hello", pairs: 12, duration: 3, warmup: 2, connections: 8}
OptionParser.new do |opts|
  opts.banner = "usage: ruby bench/http_paired.rb [options]"
  opts.on("--a NAME", "the server ratios are taken against (default herd)") { |name| options[:a] = name }
  opts.on("--b NAME", "the other server (default unicorn; herd@REF with --baseline REF)") { |name| options[:b] = name }
  opts.on("--baseline REF", "make herd at git revision REF available as herd@REF") { |ref| options[:baseline] = ref }
  opts.on("--app NAME", "hello or shop (default hello)") { |name| options[:app] = name }
  opts.on("--pairs N", Integer, "pairs of runs (default 12, at least 4)") { |n| options[:pairs] = [n, 4].max }
  opts.on("--duration SECONDS", Integer, "each wrk run (default 3)") { |s| options[:duration] = s }
  opts.on("--name NAME", "results file name under bench/results") { |name| options[:name] = name }
end.parse!

abort "bench/http_paired: #{HttpBench::Wrk::INSTALL_HINT}" unless HttpBench::Wrk.version
servers = HttpBench::SERVERS.dup
baseline = options[:baseline] && Bench::Baseline.extract(options[:baseline], bench: "bench/http_paired")
servers << HttpBench.baseline_server(baseline) if baseline
pick = lambda do |name|
  server = servers.find { |candidate| candidate.name == name } or
    abort "bench/http_paired: no server #{name.inspect} (#{servers.map(&:name).join(", ")}; herd@REF needs --baseline REF)"
  abort "bench/http_paired: #{name}: #{server.missing}" if server.missing
  server
end
a = pick.call(options[:a])
b = pick.call(options[:b])
app = HttpBench::APPS.find { |candidate| candidate.name == options[:app] } or abort "bench/http_paired: no app #{options[:app].inspect}"
wrk = HttpBench::Wrk.new(threads: 2, connections: options[:connections], duration: options[:duration])

# One wrk run against a running server: req/s, latency, CPU per request.
measure = lambda do |process|
  before = process.cpu
  run = wrk.run(process.url)
  after = process.cpu
  cpu = after[:workers] + after[:others] - before[:workers] - before[:others]
  {rps: run[:rps].round(1), p50_us: run[:latency_us][:p50], p90_us: run[:latency_us][:p90], p99_us: run[:latency_us][:p99],
   errors: run[:errors].values.sum, cpu_us_per_request: (cpu / run[:requests] * 1e6).round(1)}
end

env = Bench::Report.environment(command).merge(loadavg_start: Bench::Report.loadavg)
started = Bench::Clock.now
pairs = Dir.mktmpdir("bench-http-paired") do |logs|
  processes = [a, b].to_h do |server|
    [server, HttpBench::ServerProcess.new(server, app: app.rackup, path: app.path, log_path: File.join(logs, "#{server.name}.log"))]
  end
  begin
    processes.each_value(&:start)
    processes.each_value { |process| wrk.warm(process.url, options[:warmup]) }
    Array.new(options[:pairs]) do |index|
      order = index.even? ? [a, b] : [b, a]
      runs = order.to_h { |server| [server.name, measure.call(processes.fetch(server))] }
      warn format("  pair %2d: %s %.0f req/s %.1f µs/req p99 %.2f ms | %s %.0f req/s %.1f µs/req p99 %.2f ms", index + 1,
        a.name, runs[a.name][:rps], runs[a.name][:cpu_us_per_request], runs[a.name][:p99_us] / 1e3,
        b.name, runs[b.name][:rps], runs[b.name][:cpu_us_per_request], runs[b.name][:p99_us] / 1e3)
      {first: order.first.name, a: runs[a.name], b: runs[b.name]}
    end
  ensure
    processes.each_value(&:stop)
  end
end
baseline&.remove
env[:loadavg_end] = Bench::Report.loadavg
env[:seconds] = (Bench::Clock.now - started).round(1)

ratio_row = lambda do |label, key, better|
  ratios = pairs.map { |pair| pair[:b][key] / pair[:a][key].to_f }
  stats = Bench::Stats.summary(ratios)
  [label, Bench::Stats.range(stats, "%.3f"),
    "#{Bench::Stats.median(pairs.map { |pair| pair[:a][key] }).round(1)} vs #{Bench::Stats.median(pairs.map { |pair| pair[:b][key] }).round(1)}",
    better]
end
rows = [
  ratio_row.call("req/s", :rps, "above 1: #{b.name} serves more"),
  ratio_row.call("CPU µs per request (all the server's processes)", :cpu_us_per_request, "below 1: #{b.name} uses less"),
  ratio_row.call("p50 latency, µs", :p50_us, "below 1: #{b.name} faster"),
  ratio_row.call("p90 latency, µs", :p90_us, "below 1: #{b.name} faster"),
  ratio_row.call("p99 latency, µs", :p99_us, "below 1: #{b.name} faster")
]
errors = pairs.sum { |pair| pair[:a][:errors] + pair[:b][:errors] }
table = Bench::Report.markdown_table(["measure", "#{b.name} / #{a.name}: median of the pairs (min–max)",
  "medians: #{a.name} vs #{b.name}", "reading"], rows)
raw = Bench::Report.markdown_table(["pair", "first", "#{a.name} req/s", "#{a.name} µs/req", "#{a.name} p99 ms",
  "#{b.name} req/s", "#{b.name} µs/req", "#{b.name} p99 ms"],
  pairs.each_with_index.map do |pair, index|
    [index + 1, pair[:first], pair[:a][:rps].round, pair[:a][:cpu_us_per_request], (pair[:a][:p99_us] / 1e3).round(2),
      pair[:b][:rps].round, pair[:b][:cpu_us_per_request], (pair[:b][:p99_us] / 1e3).round(2)]
  end)
markdown = <<~MD
  # HTTP, paired: #{b.name} against #{a.name}, #{app.name}

  #{Bench::Report.environment_markdown(env)}- app: #{app.name} (`GET #{app.path}`: #{app.description})
  - `#{wrk.command.join(" ")}` per run, #{options[:pairs]} pairs, the order flipped every pair; both servers
    started once (2 workers each, as in bench/http.rb), warmed #{options[:warmup]} s each, idle while the other is measured
  - load average at start: #{env[:loadavg_start]}, at end: #{env[:loadavg_end]}; whole run: #{env[:seconds]} s; errors: #{errors}

  #{table}
  ### Every pair

  #{raw}
MD
name = options[:name] || "http-paired-#{a.name}-vs-#{b.name}-#{app.name}".tr("@", "-")
paths = Bench::Report.write(name, markdown: markdown,
  data: {environment: env, options: options, a: a.name, b: b.name, app: app.name, pairs: pairs})
warn "wrote #{paths.join(" and ")}"
