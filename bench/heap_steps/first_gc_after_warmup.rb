# frozen_string_literal: true

# A fork's first GC after Process.warmup (Ruby >= 3.3), with the heap's
# shape beside it (docs/HEAP_STEPS.md, "What stands out"):
#
#   RUBY_YJIT_ENABLE=1 /root/.herd/rubies/3.4.5/bin/ruby bench/heap_steps/first_gc_after_warmup.rb [RUNS]
#
# Each run, in a fresh Ruby: bench/heap_steps' heap, Process.warmup, a fork
# whose child prints the young objects the build left, the heap's pages and
# free slots (all slot sizes, then the 40-byte heap's pages), and its
# Private_Dirty after GC.start.

abort "no Process.warmup before Ruby 3.3" unless Process.respond_to?(:warmup)

if ARGV.first == "--one"
  $LOAD_PATH.unshift File.expand_path("../../lib", __dir__)
  require "herd/heap"
  require_relative "app_heap"
  app = HeapStepsBench::AppHeap.build
  young = Herd::Heap.census[:young]
  Process.warmup
  pid = Process.fork do
    pages = GC.stat(:heap_allocated_pages)
    free = GC.stat(:heap_free_slots)
    small = GC.stat_heap(0, :heap_eden_pages)
    GC.start
    dirty = File.read("/proc/self/smaps_rollup")[/^Private_Dirty:\s+(\d+) kB/, 1].to_i / 1024.0
    $stdout.syswrite(format("young at the end of the build %dk, %d pages, %dk free slots, 40-byte heap %d pages: " \
      "Private_Dirty after GC.start %.1f MiB\n", young / 1000, pages, free / 1000, small, dirty))
    exit!(0)
  end
  Process.wait(pid)
  app.clear
  exit
end

require "rbconfig"
puts RUBY_DESCRIPTION
Integer(ARGV.fetch(0, "6")).times { system(RbConfig.ruby, __FILE__, "--one") }
