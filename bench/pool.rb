# frozen_string_literal: true

# Herd's pool against sequential code, threads and the parallel gem:
#
#   1. seed     the "Forking and Threading in Ruby" table: CPU, sleep and
#               download loads (a local HTTP server, no internet)
#   2. overhead a trivial block over 100,000 items: microseconds per item
#   3. speedup  CPU-bound items of equal cost on 2 processes
#   4. memory   Σ PSS of parent + workers over a ~200 MB preloaded dataset
#   5. call     what one two-item Herd.map costs (vs two bare forks and the
#               parallel gem), and a 64-item job of ~146 ms sequential
#   6. gaps     that job's items timed in their workers: how long a worker
#               waits between two items, before the first and after the last
#
#   bundle exec ruby bench/pool.rb [--reps N] [--only seed,overhead,speedup,memory,call,gaps] [--name NAME]
#
# The parallel gem is in the optional bench group
# (bundle config set --local with bench && bundle install); without it its
# rows say "skipped". Writes bench/results/pool.md and bench/results/pool.json
# (--name NAME: bench/results/NAME.md, for a partial run that must not
# replace the full one).

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "optparse"
require "herd"
require_relative "pool/support"
require_relative "pool/seed_table"
require_relative "pool/overhead"
require_relative "pool/speedup"
require_relative "pool/memory"
require_relative "pool/call_cost"
require_relative "pool/idle_gaps"

BENCHMARKS = {
  "seed" => PoolBench::SeedTable,
  "overhead" => PoolBench::Overhead,
  "speedup" => PoolBench::Speedup,
  "memory" => PoolBench::Memory,
  "call" => PoolBench::CallCost,
  "gaps" => PoolBench::IdleGaps
}.freeze

command = Bench::Report.command_line($PROGRAM_NAME, ARGV) # before OptionParser empties ARGV
options = {reps: 3, only: BENCHMARKS.keys, name: "pool"}
OptionParser.new do |opts|
  opts.banner = "usage: ruby bench/pool.rb [options]"
  opts.on("--reps N", Integer, "repetitions per variant (default 3, at least 3)") { |n| options[:reps] = [n, 3].max }
  opts.on("--only LIST", Array, "benchmarks to run (#{BENCHMARKS.keys.join(",")})") do |list|
    unknown = list - BENCHMARKS.keys
    raise OptionParser::InvalidArgument, unknown.join(",") unless unknown.empty?

    options[:only] = list
  end
  opts.on("--name NAME", "results file name under bench/results (default pool)") { |name| options[:name] = name }
end.parse!

env = Bench::Report.environment(command)
env[:loadavg_start] = Bench::Report.loadavg
env[:parallel] = PoolBench.parallel_missing ? "skipped: #{PoolBench.parallel_missing}" : Parallel::VERSION
warn "parallel gem: #{env[:parallel]}"

started = Bench::Clock.now
results = options[:only].to_h do |name|
  warn "== #{name}"
  [name, BENCHMARKS.fetch(name).new(reps: options[:reps]).call]
end
env[:loadavg_end] = Bench::Report.loadavg
env[:seconds] = (Bench::Clock.now - started).round(1)

markdown = <<~MD
  # Pool: herd vs sequential, threads and the parallel gem

  #{Bench::Report.environment_markdown(env)}- parallel gem: #{env[:parallel]}
  - load average (1/5/15 min) at start: #{env[:loadavg_start]}, at end: #{env[:loadavg_end]}
  - whole run: #{env[:seconds]} s

  #{results.values.map { |result| result[:markdown] }.join("\n")}
MD
paths = Bench::Report.write(options[:name], markdown: markdown, data: {environment: env, benchmarks: results.transform_values { |r| r[:data] }})
warn "wrote #{paths.join(" and ")}"
