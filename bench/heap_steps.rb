# frozen_string_literal: true

# What each step of Herd::Heap.prepare buys and costs on the Ruby at hand.
#
# Each run, in a fresh Ruby (bench/heap_steps/worker.rb), builds a heap
# shaped like a booted app's (bench/heap_steps/app_heap.rb), prepares it with
# one configuration, forks two children that each run GC.start (their first
# GC) and allocate 20,000 objects, and reads their Private_Dirty: what the
# fork's first GC and first allocations copied. The parent's side: wall and
# CPU time of Heap.prepare, its RSS and PSS against before. Then the
# children end, one with Kernel#exit and one with Herd::ProcessExit.graceful,
# and the parent counts the minor faults of each exit (read from the zombie).
#
#   ruby bench/heap_steps.rb [--reps N] [--ruby-label LABEL] [--only a,b] [--scale F]
#   RUBY_YJIT_ENABLE=1 ruby bench/heap_steps.rb
#
# Writes bench/results/heap-steps-LABEL-(yjit|nojit).md and .json.

require "open3"
require "optparse"
require "rbconfig"
require_relative "support/clock"
require_relative "support/report"
require_relative "support/stats"
require_relative "heap_steps/app_heap"
require_relative "heap_steps/variants"

WORKER = File.expand_path("heap_steps/worker.rb", __dir__)
MIB = 1024.0 * 1024
PAGE = 4096

ARGS = ARGV.dup
options = {reps: 3, label: RUBY_VERSION, only: nil, scale: 1.0}
OptionParser.new do |opts|
  opts.banner = "usage: ruby bench/heap_steps.rb [options]"
  opts.on("--reps N", Integer, "runs per variant, each in a fresh Ruby (default 3)") { |n| options[:reps] = [n, 1].max }
  opts.on("--ruby-label LABEL", "names the results file (default RUBY_VERSION)") { |label| options[:label] = label }
  opts.on("--only LIST", Array, "variants (#{HeapStepsBench::VARIANTS.map(&:name).join(",")})") { |list| options[:only] = list }
  opts.on("--scale F", Float, "multiplies the heap's size (default 1: ~180 MiB)") { |f| options[:scale] = f }
end.parse!

YJIT = !!(defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?)
# The workers run as this Ruby does: YJIT on or off (Ruby 3.1 turns YJIT on
# for any value of RUBY_YJIT_ENABLE, 0 included, so off means unset), and
# none of herd's switches that turn steps off.
WORKER_ENV = {"RUBY_YJIT_ENABLE" => YJIT ? "1" : nil, "HERD_HEAP_INTERNALS" => nil, "HERD_FAST_EXIT" => nil,
              "HERD_PREPARE_HEAP" => nil}.freeze

variants = HeapStepsBench::VARIANTS
if options[:only]
  unknown = options[:only] - variants.map(&:name)
  abort "unknown variants: #{unknown.join(", ")}" unless unknown.empty?
  variants = variants.select { |variant| options[:only].include?(variant.name) }
end

def run_worker(variant, scale)
  command = [RbConfig.ruby, *(YJIT ? ["--yjit"] : []), WORKER, variant.name, scale.to_s]
  out, err, status = Open3.capture3(WORKER_ENV, *command)
  raise "#{variant.name} failed: #{status.inspect}\n#{err}" unless status.success?

  warn err unless err.empty?
  JSON.parse(out.lines.last, symbolize_names: true).tap do |run|
    raise "#{variant.name} ran with YJIT #{run[:yjit]}, not #{YJIT}" if !run.key?(:unavailable) && run[:yjit] != YJIT
  end
end

started = Bench::Clock.now
results = variants.to_h { |variant| [variant.name, {runs: []}] }
options[:reps].times do |rep|
  # Each repetition starts one variant further on.
  variants.rotate(rep).each do |variant|
    result = results[variant.name]
    next if result[:unavailable]

    warn "rep #{rep + 1}/#{options[:reps]}: #{variant.name}"
    run = run_worker(variant, options[:scale])
    run[:unavailable] ? result[:unavailable] = run[:unavailable] : result[:runs] << run
  end
end
elapsed = Bench::Clock.now - started

def stats(values)
  Bench::Stats.summary(values.compact)
end

def summarize(runs)
  children = runs.flat_map { |run| run[:children] }
  exits = children.group_by { |child| child[:exit] }.transform_values do |list|
    {touched: stats(list.map { |c| c[:exit_cost][:minflt] * PAGE }), cpu_ms: stats(list.map { |c| c[:exit_cost][:cpu_ms] })}
  end
  {
    copied: stats(children.map { |c| c[:measured][:after_alloc] }),
    after_gc: stats(children.map { |c| c[:measured][:after_gc] }),
    at_fork: stats(children.map { |c| c[:measured][:at_fork] }),
    child_gc_ms: stats(children.map { |c| c[:measured][:gc_seconds] * 1000 }),
    prepare_ms: stats(runs.map { |run| run[:prepare][:wall] * 1000 }),
    prepare_cpu_ms: stats(runs.map { |run| run[:prepare][:cpu] * 1000 }),
    rss_delta: stats(runs.map { |run| run[:parent_after][:rss] - run[:parent_before][:rss] }),
    pss_delta: stats(runs.map { |run| run[:parent_after][:pss] - run[:parent_before][:pss] }),
    parent_rss: stats(runs.map { |run| run[:parent_before][:rss] }),
    young: stats(runs.map { |run| run[:heap][:census][:young] }),
    live: stats(runs.map { |run| run[:heap][:census][:live] }),
    steps: runs.flat_map { |run| run[:prepare][:steps].to_h.keys }.uniq.to_h do |step|
      [step, stats(runs.map { |run| run[:prepare][:steps].to_h.dig(step, :cpu)&.*(1000) })]
    end,
    gc_at_fork: runs.map { |run| run[:prepare][:gc_state_at_fork] }.tally,
    exits: exits
  }
end

results.each_value { |result| result[:summary] = summarize(result[:runs]) unless result[:unavailable] || result[:runs].empty? }

def mib(bytes, digits = 1)
  bytes.nil? ? "–" : format("%.#{digits}f", bytes / MIB)
end

def signed_mib(bytes)
  bytes.nil? ? "–" : format("%+.1f", bytes / MIB)
end

def ranged(stat, &format)
  Bench::Stats.range(stat, format)
end

def ms(value)
  format("%.0f", value)
end

summary = ->(name) { results.dig(name, :summary) }
plain = summary.call("plain")&.dig(:copied, :median)

rows = variants.map do |variant|
  result = results[variant.name]
  next [variant.label, "steps aside: #{result[:unavailable]}", *[""] * 8] if result[:unavailable]

  s = result[:summary]
  base = variant.base && summary.call(variant.base)&.dig(:copied, :median)
  median = s[:copied][:median]
  [
    variant.label,
    ranged(s[:copied]) { |v| mib(v) },
    ranged(s[:after_gc]) { |v| mib(v) },
    plain ? format("%.2f", median / plain) : "–",
    base ? "#{signed_mib(median - base)} (vs #{variant.base})" : "–",
    variant.options ? ranged(s[:prepare_ms]) { |v| ms(v) } : "–",
    variant.options ? ranged(s[:prepare_cpu_ms]) { |v| ms(v) } : "–",
    ranged(s[:rss_delta]) { |v| signed_mib(v) },
    ranged(s[:pss_delta]) { |v| signed_mib(v) },
    s[:gc_at_fork].map { |state, n| (n == result[:runs].size) ? state : "#{state} ×#{n}" }.join(", ")
  ]
end
table = Bench::Report.markdown_table(
  ["variant", "child Private_Dirty after GC + 20k objects, MiB: median (min–max)", "after its GC only",
    "vs plain", "vs the step before, MiB", "prepare wall, ms", "prepare CPU, ms", "parent RSS Δ, MiB",
    "parent PSS Δ, MiB", "GC at fork"],
  rows
)

exit_rows = variants.filter_map do |variant|
  s = results.dig(variant.name, :summary) or next
  exit_, graceful = s[:exits].values_at("exit", "graceful")
  [variant.label, ranged(exit_[:touched]) { |v| mib(v) }, ranged(exit_[:cpu_ms]) { |v| ms(v) },
    ranged(graceful[:touched]) { |v| mib(v) }, ranged(graceful[:cpu_ms]) { |v| ms(v) }]
end
exit_table = Bench::Report.markdown_table(
  ["heap prepared as", "Kernel#exit: MiB written (minor faults × 4 KiB)", "its CPU, ms",
    "ProcessExit.graceful: MiB written", "its CPU, ms"],
  exit_rows
)

STEP_COLUMNS = ["promotion GCs", "Process.warmup", "GC.compact", "fill_free_slots", "pack_descriptors", "seal_malloc",
  "trim_malloc"].freeze
step_rows = variants.filter_map do |variant|
  s = results.dig(variant.name, :summary) or next
  next unless variant.options

  [variant.label, *STEP_COLUMNS.map { |step| s[:steps][step.to_sym] ? ranged(s[:steps][step.to_sym]) { |v| ms(v) } : "" }]
end
step_table = Bench::Report.markdown_table(["variant", *STEP_COLUMNS], step_rows)

first_runs = results.values.filter_map { |result| result[:runs].first }
steps = first_runs.first&.dig(:steps) || []
reports = variants.filter_map do |variant|
  line = results.dig(variant.name, :runs, 0, :prepare, :report)
  "- #{variant.name}: #{line}" if line
end
heap = summary.call("plain") || results.values.filter_map { |r| r[:summary] }.first
heap_facts = if heap
  format("%.2f M live objects, %.2f M of them young (medians), parent RSS %s MiB before any preparation",
    heap[:live][:median] / 1e6, heap[:young][:median] / 1e6, mib(heap[:parent_rss][:median], 0))
else
  "no run"
end
yjit_text = YJIT ? "on" : "off"
prefix = [("RUBY_YJIT_ENABLE=1" if YJIT), ("bundle exec" if ENV["BUNDLE_GEMFILE"])].compact
command = [*prefix, RbConfig.ruby, Bench::Report.relative($PROGRAM_NAME), *ARGS].join(" ")
env = Bench::Report.environment(command).merge(yjit: YJIT, ruby_label: options[:label])

markdown = <<~MD
  # Heap preparation, one step at a time: Ruby #{options[:label]}, YJIT #{yjit_text}

  #{Bench::Report.environment_markdown(env)}- YJIT: #{yjit_text}
  - total: #{format("%.0f", elapsed)} s

  Each run, in a fresh Ruby: an app-like heap (bench/heap_steps/app_heap.rb, scale #{options[:scale]}: #{HeapStepsBench::AppHeap.description(options[:scale])}),
  #{heap_facts};
  one configuration of `Herd::Heap.prepare`; 2 children forked, each runs `GC.start` and allocates 20,000 objects
  (one in five a 1,000-byte string), then reads its own Private_Dirty (smaps_rollup): what the fork's first GC and
  allocations copied, plus what the child allocated itself. #{options[:reps]} runs per variant, interleaved; child
  figures pooled over both children of every run. MiB = 2^20 bytes. Timings are noisy on a shared 2-core machine:
  read the ranges.

  Steps on this Ruby (`Herd::Heap::Steps.all`):
  #{steps.map { |line| "- #{line}" }.join("\n")}

  #{table}
  "vs the step before": the median's difference from the variant it adds one step to. The parent's RSS and PSS are
  read before the preparation and after the children are gone. "GC at fork": `GC.latest_gc_info(:state)` right
  after the preparation (`marking`: an incremental major GC under way, which every child then finishes).

  ## Each step's own time

  CPU ms of each step inside `Heap.prepare`, median (min–max), timed around herd's own methods in the thread that
  ran them (with `nice:`, a thread of its own): `Heap.promote` (every call, the minor GCs), `Heap.warm_up`,
  `Heap.compact!`, `Heap.fill`, `PageDescriptors.pack`, `Malloc.seal_free_chunks` (its closing `malloc_trim`
  included) and `Malloc.trim`.

  #{step_table}
  ## The fast exit

  The same children, after their measurements, one after the other: the first ends with `exit` (Ruby's whole exit:
  at_exit hooks, finalizers, then every object that holds C memory freed), the second with
  `Herd::ProcessExit.graceful` (at_exit hooks, then `exit!`). No code runs after an exit and a zombie has no memory
  map left, but its minor page faults stay in /proc/PID/stat until it is reaped: the parent reads them once the
  child is a zombie and subtracts the child's own reading just before it called exit. Every page an exit copies from
  the shared heap is one fault (so is each fresh page it touches). CPU: the child's main thread
  (/proc/PID/schedstat) over the same span.

  #{exit_table}
  What each preparation did (first run):
  #{reports.empty? ? "- none" : reports.join("\n")}
MD

data = {environment: env, options: options, elapsed: elapsed, child_objects: 20_000, children_per_run: 2,
        variants: variants.map(&:to_h), results: results}
name = "heap-steps-#{options[:label]}-#{YJIT ? "yjit" : "nojit"}"
paths = Bench::Report.write(name, markdown: markdown.gsub(/\n{3,}/, "\n\n"), data: data)
puts markdown
warn "wrote #{paths.join(" and ")}"
