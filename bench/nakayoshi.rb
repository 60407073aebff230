# frozen_string_literal: true

# The nakayoshi_fork seed's test on today's Ruby: build ~4.2M young arrays,
# fork 4 children, run one GC.start in each, and see how much of the heap each
# child copied (its Private_Dirty). Four variants, each repetition in a fresh
# Ruby (bench/nakayoshi/worker.rb):
#
#   plain           Process.fork, nothing else
#   herd            require "herd/fork": Herd::Heap.prepare before every fork
#   herd+compact    the same with Herd::ForkHook.prepare_heap = {compact: true}
#   nakayoshi_fork  require "nakayoshi_fork" and a bare `fork` (all it hooks)
#
#   bundle exec ruby bench/nakayoshi.rb [--reps N] [--no-breakdown]
#
# Writes bench/results/nakayoshi.md and bench/results/nakayoshi.json.

require "open3"
require "optparse"
require "rbconfig"
require_relative "support/report"

WORKER = File.expand_path("nakayoshi/worker.rb", __dir__)
VARIANTS = %w[plain herd herd+compact nakayoshi_fork].freeze
CHILDREN = 4 # as in the worker
TARGET = 0.05 # herd's child may copy at most 5% of what a plain fork's child copies
MB = 1024.0 * 1024

options = {reps: 5, breakdown: true}
OptionParser.new do |opts|
  opts.banner = "usage: ruby bench/nakayoshi.rb [options]"
  opts.on("--reps N", Integer, "repetitions per variant (default 5, at least 3)") { |n| options[:reps] = [n, 3].max }
  opts.on("--[no-]breakdown", "one more run per variant classifying the child's private pages (default on)") { |b| options[:breakdown] = b }
end.parse!

# Runs one variant in a fresh Ruby that inherits our environment (Bundler's
# included), minus anything that would switch herd off.
def run_worker(variant, mode)
  out, err, status = Open3.capture3({"HERD_PREPARE_HEAP" => nil}, RbConfig.ruby, WORKER, variant, mode)
  raise "#{variant} (#{mode}) failed: #{status.inspect}\n#{err}" unless status.success?

  warn err unless err.empty?
  JSON.parse(out.lines.last, symbolize_names: true)
end

def mb(bytes, digits = 1)
  bytes.nil? ? "–" : format("%.#{digits}f", bytes / MB)
end

def ms(seconds)
  format("%.1f", seconds * 1000)
end

def summarize(runs)
  children = runs.flat_map { |run| run[:children] }
  firsts = runs.map { |run| run[:forks].first }
  {
    child_private_dirty: Bench::Stats.summary(children.map { |c| c[:private_dirty_after_gc] }),
    child_private_dirty_before_gc: Bench::Stats.summary(children.map { |c| c[:private_dirty_before_gc] }),
    child_gc_time: Bench::Stats.summary(children.map { |c| c[:gc_time] }),
    first_fork_latency: Bench::Stats.summary(firsts.map { |f| f[:latency] }),
    first_fork_gc_runs: Bench::Stats.summary(firsts.map { |f| f[:gc_runs] }),
    later_fork_latency: Bench::Stats.summary(runs.flat_map { |run| run[:forks].drop(1).map { |f| f[:latency] } }),
    parent_rss: Bench::Stats.summary(runs.map { |run| run[:parent_rss] }),
    young_before_fork: Bench::Stats.summary(runs.map { |run| run[:young_before_fork] }),
    prepare: firsts.filter_map { |f| f[:prepare] }.first
  }
end

results = VARIANTS.to_h { |variant| [variant, {runs: []}] }
options[:reps].times do |rep|
  VARIANTS.each do |variant|
    next if results[variant][:unavailable]

    warn "rep #{rep + 1}/#{options[:reps]}: #{variant}"
    run = run_worker(variant, "measure")
    if run[:unavailable]
      results[variant][:unavailable] = run[:unavailable]
    else
      results[variant][:runs] << run
    end
  end
end
results.each_value { |result| result[:summary] = summarize(result[:runs]) unless result[:unavailable] }

breakdown = {}
if options[:breakdown]
  VARIANTS.each do |variant|
    next if results[variant][:unavailable]

    warn "breakdown: #{variant}"
    breakdown[variant] = run_worker(variant, "breakdown")
  end
end

plain = results.dig("plain", :summary, :child_private_dirty, :median)
ratio = ->(value) { (value && plain&.positive?) ? value.fdiv(plain) : nil }

rows = VARIANTS.map do |variant|
  result = results[variant]
  next [variant, "#{variant}: #{result[:unavailable]}", *[""] * 7] if result[:unavailable]

  s = result[:summary]
  pd = s[:child_private_dirty]
  r = ratio.call(pd[:median])
  [
    variant,
    Bench::Stats.range(pd, method(:mb)),
    r ? format("%.1f%%", r * 100) : "–",
    mb(s[:child_private_dirty_before_gc][:median]),
    "#{ms(s[:first_fork_latency][:median])} (GCs: #{s[:first_fork_gc_runs][:median]})",
    ms(s[:later_fork_latency][:median]),
    ms(s[:child_gc_time][:median]),
    mb(s[:parent_rss][:median]),
    format("%.2f", s[:young_before_fork][:median] / 1e6)
  ]
end
table = Bench::Report.markdown_table(
  ["variant", "child Private_Dirty after its GC, MB: median (min–max)", "vs plain",
    "child Private_Dirty before GC, MB", "1st fork: parent's prepare + fork, ms (GCs run)",
    "later forks, ms", "child GC.start, ms", "parent RSS, MB", "young objects at fork, M"],
  rows
)

herd_ratio = ratio.call(results.dig("herd", :summary, :child_private_dirty, :median))
verdict = if herd_ratio
  format("herd's child copies %.1f%% of what a plain fork's child copies: target < %d%% %s.",
    herd_ratio * 100, TARGET * 100, (herd_ratio < TARGET) ? "met" : "NOT met")
else
  "No herd figure."
end
prepared = VARIANTS.filter_map do |variant|
  line = results.dig(variant, :summary, :prepare)
  "- #{variant}: #{line}" if line
end

breakdown_md = ""
unless breakdown.empty?
  kinds = %i[private_dirty object_heap gc_page_metadata other_anonymous other_mappings]
  brows = breakdown.flat_map do |variant, b|
    [["#{variant}, after GC.start", *kinds.map { |kind| mb(b[:with_gc][kind].to_i, 2) }],
      ["#{variant}, no GC", *kinds.map { |kind| mb(b[:without_gc][kind].to_i, 2) }]]
  end
  one = breakdown.values.first[:with_gc]
  floor = one[:heap_pages] * one[:struct_size]
  notes = []
  if (herd = breakdown.dig("herd", :with_gc)) && (base = breakdown.dig("plain", :with_gc))
    notes << format("Object heap pages copied after the GC: herd %.2f MB, plain %.2f MB (%.2f%%).",
      herd[:object_heap].to_i / MB, base[:object_heap].to_i / MB, 100.0 * herd[:object_heap].to_i / base[:object_heap].to_i)
  end
  if plain
    notes << format("Any GC in a child writes every page's `struct heap_page` (%d × %d bytes = %.1f MB, %.1f%% " \
      "of plain's median): no heap preparation avoids that copy.", one[:heap_pages], one[:struct_size],
      floor / MB, 100.0 * floor / plain)
  end
  breakdown_md = <<~MD

    ## What the child's private pages hold

    One more run per variant with two children measured the same way, one after `GC.start` and one
    that runs no GC: the pages only the child maps (/proc/self/pagemap bit 56), by what they hold,
    in MB. *Object heap*: the #{one[:heap_pages]} heap pages of #{one[:heap_page_size] / 1024} KiB that hold the
    objects. *GC page metadata*: the malloc'd `struct heap_page` of each (~#{one[:struct_size]} bytes: free
    list, counters, and the mark, uncollectible, marking, pinned and write-barrier bitmaps). *Other
    anonymous*: the rest of malloc and anonymous memory (mark stack, GC bookkeeping, and this
    measurement's own allocations, which is why the no-GC child has some). *Other mappings*: stacks,
    libraries' data.

    #{Bench::Report.markdown_table(["child", "Private_Dirty", "object heap", "GC page metadata",
      "other anonymous", "other mappings"], brows)}
    #{notes.join("\n")}
  MD
end

env = Bench::Report.environment(Bench::Report.command_line($PROGRAM_NAME, ARGV))
run = results.dig("plain", :runs)&.first
markdown = <<~MD
  # nakayoshi_fork's test on today's Ruby

  #{Bench::Report.environment_markdown(env)}
  The seed's heap: `make_obj(21)`, #{run ? run[:objects_created] : "~4.2M"} small arrays, about half of them
  still young when the first fork comes. #{CHILDREN} children per run; each runs one `GC.start` and reports its
  Private_Dirty (read with #{run ? run[:memory_reader] : "smaps_rollup"}). #{options[:reps]} runs per variant, each in
  a fresh Ruby; child figures pooled over all runs (#{options[:reps] * CHILDREN} children per variant). Fork times
  are the parent's, around the fork call: heap preparation plus fork(2). MB here are 2^20 bytes.

  #{table}
  #{verdict}

  Heap preparation in the first fork of the first run:
  #{prepared.empty? ? "- none" : prepared.join("\n")}
  #{breakdown_md}
MD

data = {environment: env, reps: options[:reps], children_per_run: CHILDREN, target_ratio: TARGET,
        herd_ratio: herd_ratio, variants: results, breakdown: breakdown}
paths = Bench::Report.write("nakayoshi", markdown: markdown.gsub(/\n{3,}/, "\n\n"), data: data)
puts markdown
warn "wrote #{paths.join(" and ")}"
