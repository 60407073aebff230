# frozen_string_literal: true

# One run of one variant of bench/heap_steps.rb, in a fresh Ruby: builds the
# app-like heap, prepares it as the variant says, forks two children and
# measures them. Prints one line of JSON.
#
#   ruby bench/heap_steps/worker.rb VARIANT [SCALE]
#
# Each child runs GC.start (its first GC) and allocates a little, reporting
# its Private_Dirty before and after; then, one child after the other, the
# first ends with Kernel#exit (Ruby's whole exit) and the second with
# Herd::ProcessExit.graceful (at_exit hooks, then exit!). What an exit
# writes can't be read from the child's smaps: no Ruby code runs after it,
# and a zombie has no memory map left. Its minor page faults are still
# counted in /proc/PID/stat until it is reaped, so the parent reads them
# once the child is a zombie and subtracts what the child read just before
# calling exit: every copy-on-write copy is one minor fault (as is every
# fresh page the exit touches).

$LOAD_PATH.unshift File.expand_path("../../lib", __dir__)
require "json"
require "herd/heap/steps"
require_relative "app_heap"
require_relative "variants"

CHILD_OBJECTS = 20_000
CHILDREN = 2
EXITS = %w[exit graceful].freeze

variant = HeapStepsBench.variant(ARGV.fetch(0)) or abort "unknown variant #{ARGV[0].inspect}"
scale = Float(ARGV.fetch(1, "1"))
reason = HeapStepsBench.unavailable(variant)
if reason
  puts JSON.generate(variant: variant.name, unavailable: reason)
  exit
end

# @return [Hash] smaps_rollup's Rss, Pss and Private_Dirty, in bytes
def memory(pid = "self")
  rollup = File.read("/proc/#{pid}/smaps_rollup")
  %w[Rss Pss Private_Dirty].to_h { |key| [key.downcase.to_sym, rollup[/^#{key}:\s+(\d+) kB/, 1].to_i * 1024] }
end

# @return [Hash] state, minor faults, CPU ticks; the main thread's CPU in ns
def task_stat(pid = "self")
  fields = File.read("/proc/#{pid}/stat").split(") ", 2).last.split
  runtime = File.read("/proc/#{pid}/schedstat").split.first.to_i
  {state: fields[0], minflt: fields[7].to_i, ticks: fields[11].to_i + fields[12].to_i, runtime_ns: runtime}
end

def clock(id = Process::CLOCK_MONOTONIC)
  Process.clock_gettime(id)
end

# What a child allocates once its GC is done: small arrays, hashes and
# strings, one in five long enough to be malloc'd.
def allocate_a_little(objects)
  Array.new(objects / 5) { |i| [[i, i], {i => i}, "s#{i}", (i % 5 == 0) ? "l" * 1000 : "short-#{i}"] }
end

def child(exit_mode, results, go)
  at_fork = memory[:private_dirty]
  started = clock
  GC.start
  gc_seconds = clock - started
  after_gc = memory[:private_dirty]
  started = clock
  kept = allocate_a_little(CHILD_OBJECTS)
  alloc_seconds = clock - started
  after_alloc = memory[:private_dirty]
  results.write(JSON.generate(at_fork: at_fork, after_gc: after_gc, after_alloc: after_alloc, gc_seconds: gc_seconds,
    alloc_seconds: alloc_seconds, allocated: kept.size * 5) + "\n")
  go.read(1)
  # The last reading before the exit: as little as possible after it.
  results.write(JSON.generate(task_stat.merge(private_dirty: memory[:private_dirty])) + "\n")
  results.close
  (exit_mode == "exit") ? exit(0) : Herd::ProcessExit.graceful(0)
end

# Polls until the child is a zombie (its memory gone, its counters kept).
# Reads into one buffer through one descriptor: a poll that allocated would
# soon run a GC here, whose writes would make pages the child's alone.
def zombie_stat(pid, timeout: 60)
  buffer = String.new(capacity: 1024)
  deadline = clock + timeout
  File.open("/proc/#{pid}/stat") do |stat|
    loop do
      stat.sysseek(0)
      stat.sysread(1024, buffer)
      return task_stat(pid).merge(seen_at: clock) if buffer.getbyte(buffer.rindex(") ") + 2) == 90 # "Z"
      raise "child #{pid} still running after #{timeout} s" if clock > deadline

      sleep 0.0002
    end
  end
end

# Times each step inside Heap.prepare, in the thread that runs it (the GCs
# run in a thread of their own with `nice:`): each step's own cost, which
# the difference of two variants' totals drowns in noise.
module StepTimes
  TIMES = {}

  module_function

  def wrap(target, method, step)
    TIMES[step] = {calls: 0, wall: 0.0, cpu: 0.0}
    visibility = target.singleton_class.private_method_defined?(method) ? :private : :public
    timer = Module.new do
      define_method(method) do |*args, **options, &block|
        wall = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        cpu = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
        begin
          super(*args, **options, &block)
        ensure
          times = TIMES[step]
          times[:calls] += 1
          times[:wall] += Process.clock_gettime(Process::CLOCK_MONOTONIC) - wall
          times[:cpu] += Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) - cpu
        end
      end
      send(visibility, method)
    end
    target.singleton_class.prepend(timer)
  end
end
StepTimes.wrap(Herd::Heap, :promote, "promotion GCs")
StepTimes.wrap(Herd::Heap, :warm_up, "Process.warmup")
StepTimes.wrap(Herd::Heap, :compact!, "GC.compact")
StepTimes.wrap(Herd::Heap, :fill, "fill_free_slots")
StepTimes.wrap(Herd::Heap::PageDescriptors, :pack, "pack_descriptors")
StepTimes.wrap(Herd::Heap::Malloc, :seal_free_chunks, "seal_malloc")
StepTimes.wrap(Herd::Heap::Malloc, :trim, "trim_malloc")

created = GC.stat(:total_allocated_objects)
app = HeapStepsBench::AppHeap.build(scale)
heap = {
  objects_created: GC.stat(:total_allocated_objects) - created,
  census: Herd::Heap.census,
  gc_state: GC.latest_gc_info[:state].to_s,
  gc_count: GC.count,
  heap_pages: GC.stat(:heap_allocated_pages)
}

# Every pipe is made before the preparation, as a server's sockets are:
# what the parent allocates between the preparation and the children's
# measurements lands in the free slots the preparation left (16 when it
# filled them) and must stay a handful of objects, and nothing it writes
# between the two forks may make a page the first child's alone.
pipes = Array.new(CHILDREN) { {results: IO.pipe, go: IO.pipe} }
before = memory
cpu = clock(Process::CLOCK_PROCESS_CPUTIME_ID)
wall = clock
report = variant.options && Herd::Heap.prepare(**variant.options)
prepare = {wall: clock - wall, cpu: clock(Process::CLOCK_PROCESS_CPUTIME_ID) - cpu}
# A GC still marking or sweeping when the children are forked goes on in
# each of them.
prepare[:gc_state_at_fork] = GC.latest_gc_info(:state)

first = Process.fork { child(EXITS[0], pipes[0][:results][1], pipes[0][:go][0]) }
second = Process.fork { child(EXITS[1], pipes[1][:results][1], pipes[1][:go][0]) }
# No GC here until the children are gone, and raw lines only until both
# have measured themselves.
GC.disable
lines = [pipes[0][:results][0].gets, pipes[1][:results][0].gets]

children = [first, second].each_with_index.map do |pid, i|
  {pid: pid, exit: EXITS.fetch(i), measured: JSON.parse(lines[i], symbolize_names: true)}
end
children.each_with_index do |c, i|
  results = pipes[i][:results][0]
  pipes[i][:go][1].write("g")
  c[:before_exit] = JSON.parse(results.gets, symbolize_names: true)
  told = clock
  zombie = zombie_stat(c[:pid])
  _, status = Process.wait2(c[:pid])
  raise "child #{c[:pid]} failed: #{status.inspect}" unless status.success?

  pre = c[:before_exit]
  c[:exit_cost] = {minflt: zombie[:minflt] - pre[:minflt], ms: (zombie[:seen_at] - told) * 1000,
                   cpu_ms: (zombie[:runtime_ns] - pre[:runtime_ns]) / 1e6}
end
# The children gone, this process's pages are its own again: its RSS and
# PSS against those before the preparation are what the preparation left.
GC.enable
after = memory
prepare[:report] = report&.to_s
# seal_free_chunks ends with a trim of its own: counted in the seal.
prepare[:steps] = StepTimes::TIMES.reject do |step, times|
  times[:calls].zero? || (step == "trim_malloc" && StepTimes::TIMES["seal_malloc"][:calls].positive?)
end
prepare[:strategy] = report&.strategy
prepare[:gc_runs] = report&.gc_runs
prepare[:filled] = report&.filled
prepare[:duration] = report&.duration

puts JSON.generate(
  variant: variant.name, ruby: RUBY_DESCRIPTION, yjit: !!(defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?),
  scale: scale, steps: Herd::Heap::Steps.all.map(&:to_s), heap: heap, parent_before: before, parent_after: after, prepare: prepare,
  children: children.map { |c| c.slice(:exit, :measured, :before_exit, :exit_cost) }
)
report&.release
app.clear
