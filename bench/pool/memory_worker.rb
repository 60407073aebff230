# frozen_string_literal: true

# One run of the memory benchmark, in a fresh Ruby so that no earlier run has
# already aged or compacted the heap:
#
#   ruby bench/pool/memory_worker.rb VARIANT WORKLOAD
#
# Builds a ~200 MB dataset, measures this process's PSS, then maps over the
# dataset's slices with 2 workers and, from the parent's finish: callback,
# reads the PSS of the whole process tree at 25/50/75/95% of the items.
# Prints one JSON line.

$LOAD_PATH.unshift File.expand_path("../../lib", __dir__)
require "json"
require "herd"
require "herd/memory"

RECORDS = 300_000
ITEMS = 1000
SLICE = RECORDS / ITEMS
WORKERS = 2
FRACTIONS = [0.25, 0.5, 0.75, 0.95].freeze

# Reads fields and builds small strings from them.
WORKLOADS = {
  "read" => ->(data, i) { data[i * SLICE, SLICE].map { |r| "#{r[:id]}:#{r[:name].bytesize}:#{r[:tags].size}" }.sum(&:bytesize) },
  # The same, plus Array#join over each record's tags: MRI's rb_str_buf_append
  # stores the appended string's coderange back into it (ENC_CODERANGE_SET),
  # a write to every joined string's header even though nothing changes.
  "join" => ->(data, i) { data[i * SLICE, SLICE].map { |r| "#{r[:id]}:#{r[:name].bytesize}:#{r[:tags].join(",")}" }.sum(&:bytesize) }
}.freeze

VARIANTS = {
  "herd" => ->(items, finish, &work) { Herd.map(items, processes: WORKERS, finish: finish, &work) },
  "herd prepare_heap: {compact: true}" => lambda do |items, finish, &work|
    Herd.map(items, processes: WORKERS, prepare_heap: {compact: true}, finish: finish, &work)
  end,
  # What sealing malloc's free chunks is worth.
  "herd prepare_heap: {seal_malloc: false}" => lambda do |items, finish, &work|
    Herd.map(items, processes: WORKERS, prepare_heap: {seal_malloc: false}, finish: finish, &work)
  end,
  # What herd's heap preparation (promotion + free slots filled) is worth.
  "herd prepare_heap: false" => lambda do |items, finish, &work|
    Herd.map(items, processes: WORKERS, prepare_heap: false, finish: finish, &work)
  end,
  "Parallel in_processes" => ->(items, finish, &work) { Parallel.map(items, in_processes: WORKERS, finish: finish, &work) }
}.freeze

def emit(hash)
  puts JSON.generate(hash)
  exit
end

variant, workload = ARGV
run = VARIANTS.fetch(variant) { abort "variant: one of #{VARIANTS.keys.join(", ")}" }
work = WORKLOADS.fetch(workload) { abort "workload: one of #{WORKLOADS.keys.join(", ")}" }
if variant.start_with?("Parallel")
  begin
    require "parallel"
  rescue LoadError => e
    emit(unavailable: "parallel gem not installed (#{e.message})")
  end
end

# Records as an app might have loaded them: hashes of an id, a 200-odd byte
# string and a small array of short strings; the garbage made on the way is
# freed by the GC, leaving free slots between the records.
data = Array.new(RECORDS) { |i| {id: i, name: "record #{i} " + ("x" * 200), tags: ["tag-#{i % 97}", "group-#{i % 13}"]} }
GC.start

def row(row, root)
  s = row.sample
  {pid: row.pid, role: (row.pid == root) ? "parent" : "worker", pss: s.pss, rss: s.rss, private_dirty: s.private_dirty}
end

root = Process.pid
before = Herd::Memory.sample(root)
heap = GC.stat.slice(:heap_live_slots, :heap_free_slots, :heap_allocated_pages, :old_objects)
marks = FRACTIONS.to_h { |fraction| [(ITEMS * fraction).round, fraction] }
samples = []
done = 0
finish = lambda do |*|
  done += 1
  next unless (fraction = marks[done])

  tree = Herd::Memory.tree(root)
  samples << {fraction: fraction, total_pss: tree.total.pss, processes: tree.rows.map { |r| row(r, root) }}
end
started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
results = run.call(0...ITEMS, finish) { |i| work.call(data, i) }
wall = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
expected = work.call(data, ITEMS / 2)
abort "#{variant}: wrong result #{results[ITEMS / 2].inspect}, expected #{expected}" unless results[ITEMS / 2] == expected

emit(variant: variant, workload: workload, records: RECORDS, items: ITEMS, workers: WORKERS,
  parent_before: {pss: before.pss, rss: before.rss, **heap}, wall: wall, samples: samples)
