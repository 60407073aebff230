# frozen_string_literal: true

# One run of one variant of bench/nakayoshi.rb, in a fresh Ruby so that no
# fork patch leaks from one variant into another. Prints one line of JSON.
#
#   ruby bench/nakayoshi/worker.rb VARIANT [measure|breakdown]

$LOAD_PATH.unshift File.expand_path("../../lib", __dir__)
require "json"

VARIANTS = %w[plain herd herd+compact nakayoshi_fork].freeze
CHILDREN = 4
DEPTH = 21 # the seed's make_obj(21): 2**22 - 1 arrays, ~4.2M objects

variant = ARGV.fetch(0)
mode = ARGV.fetch(1, "measure")
abort "unknown variant #{variant.inspect} (#{VARIANTS.join(", ")})" unless VARIANTS.include?(variant)

# Every variant loads the same code (herd's, without its fork hook), so that
# the GC runs at the same moments while the heap is built and leaves the
# same objects young: the plain fork's copy depends on that.
require "herd"
begin
  require "herd/memory"
rescue LoadError
  # Not written yet: read smaps_rollup ourselves (see private_dirty).
end

case variant
when "herd", "herd+compact"
  require "herd/fork"
  Herd::ForkHook.prepare_heap = true
  Herd::ForkHook.prepare_heap = {compact: true} if variant == "herd+compact"
when "nakayoshi_fork"
  begin
    require "nakayoshi_fork"
  rescue LoadError
    puts JSON.generate(variant: variant, unavailable: "not installed (bundle config set --local with bench && bundle install)")
    exit
  end
end

# The seed's test script: 2**(n+1) arrays.
def make_obj(n)
  (n > 0) ? [make_obj(n - 1), make_obj(n - 1)] : []
end

def clock
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def memory_reader
  (defined?(Herd::Memory) && Herd::Memory.respond_to?(:sample)) ? "Herd::Memory.sample" : "smaps_rollup"
end

# @return [Integer] bytes
def private_dirty
  return Herd::Memory.sample(Process.pid).private_dirty if memory_reader == "Herd::Memory.sample"

  File.read("/proc/self/smaps_rollup")[/^Private_Dirty:\s+(\d+) kB/, 1].to_i * 1024
end

# @return [Integer] bytes
def rss
  File.read("/proc/self/status")[/^VmRSS:\s+(\d+) kB/, 1].to_i * 1024
end

# nakayoshi_fork hooks only a bare `fork`; herd hooks Process.fork too, so
# that is what the other variants call.
def fork_child(variant, &block)
  (variant == "nakayoshi_fork") ? fork(&block) : Process.fork(&block)
end

# Forks, recording how long the parent took (heap preparation + fork(2)) and
# how many GCs ran in it.
def timed_fork(variant, &block)
  gcs = GC.count
  started = clock
  pid = fork_child(variant, &block)
  info = {latency: clock - started, gc_runs: GC.count - gcs}
  report = Herd::ForkHook.last_report if variant.start_with?("herd")
  info[:prepare] = report.to_s if report && report.strategy != :none
  [pid, info]
end

def wait_ok(pid)
  _, status = Process.wait2(pid)
  raise "child #{pid} failed: #{status.inspect}" unless status.success?
end

created = GC.stat(:total_allocated_objects)
HEAP = make_obj(DEPTH) # kept alive to the end, as the seed keeps $objs
created = GC.stat(:total_allocated_objects) - created
young = GC.stat(:heap_live_slots) - GC.stat(:old_objects)
parent_rss = rss

if mode == "breakdown"
  require_relative "breakdown"
  # Record the layout first, so that the variant's preparation (run by the
  # next fork) sweeps the garbage this makes and promotes what it keeps.
  # Compaction may move objects into other known pages, never into new ones.
  layout = Breakdown.heap_layout
  pid, first = timed_fork(variant) { exit!(0) }
  wait_ok(pid)
  # Two children measured the same way, one without a GC: the difference is
  # what the GC wrote, net of the measurement's own allocations.
  pipes = {without_gc: IO.pipe, with_gc: IO.pipe}
  pids = pipes.map do |name, (reader, writer)|
    pid, = timed_fork(variant) do
      GC.disable
      GC.start if name == :with_gc
      writer.write(JSON.generate(Breakdown.classify(layout)))
      exit!(0)
    end
    writer.close
    pid
  end
  result = pipes.transform_values { |(reader, _)| JSON.parse(reader.read, symbolize_names: true) }
  pids.each { |pid| wait_ok(pid) }
  puts JSON.generate(variant: variant, first_fork: first, parent_rss: parent_rss, **result)
  exit
end

reader, writer = IO.pipe
forks = []
pids = Array.new(CHILDREN) do
  pid, info = timed_fork(variant) do
    reader.close
    before = private_dirty
    started = clock
    GC.start
    gc_time = clock - started
    # One short write: atomic on a pipe, so the children's lines never mix.
    writer.write("#{before} #{private_dirty} #{gc_time}\n")
    writer.close
    exit!(0)
  end
  forks << info
  pid
end
writer.close
children = reader.read.lines.map do |line|
  before, after, gc_time = line.split
  {private_dirty_before_gc: Integer(before), private_dirty_after_gc: Integer(after), gc_time: Float(gc_time)}
end
pids.each { |pid| wait_ok(pid) }

puts JSON.generate(variant: variant, objects_created: created, young_before_fork: young, parent_rss: parent_rss,
  memory_reader: memory_reader, forks: forks, children: children)
