# frozen_string_literal: true

# Where a fork's first GC writes (docs/COPY_ON_WRITE.md, "GC metadata"):
#
#   bundle exec ruby bench/cow/first_gc.rb [APP.ru] [PREGROW_PAGES]
#   PACK=0 bundle exec ruby bench/cow/first_gc.rb   # without packing descriptors
#
# Loads the app (bench/cow/constant_caches.ru by default), serves 3 requests,
# prepares the heap as herd's mold does (packing the GC's page descriptors,
# then sealing malloc's free chunks), forks, runs one minor GC in the
# child and compares the child's /proc/self/pagemap over malloc's [heap]
# before and after: every page whose frame changed was copied. Pages that lie
# in a Ruby object page are counted apart. With PREGROW_PAGES, the heap is
# first grown by that many pages in one loop (GC disabled, after sealing
# malloc's free chunks), before the app is loaded: the experiment that packs
# the heap pages' descriptors together. Needs root (pagemap frame numbers).
$stdout.sync = true
$LOAD_PATH.unshift File.expand_path("../../lib", __dir__)
require "fiddle"
require "herd/heap"
require "herd/heap/page_descriptors"
require "herd/memory"
require_relative "in_process"

app_path = ARGV[0] || File.join(__dir__, "constant_caches.ru")
pregrow = ARGV[1] && Integer(ARGV[1])
page_size = GC::INTERNAL_CONSTANTS.fetch(:HEAP_PAGE_SIZE)
page_of = ->(object) { Fiddle.dlwrap(object) & ~(page_size - 1) }

if pregrow
  Herd::Heap::Malloc.seal_free_chunks
  target = GC.stat(:heap_allocated_pages) + pregrow
  GC.disable
  placeholders = []
  placeholders << Object.new while GC.stat(:heap_allocated_pages) < target
  placeholders.uniq(&page_of) # one per page, or the next GC frees the empty pages
  placeholders = nil # standard:disable Lint/UselessAssignment
  GC.enable
end
serve = CowBench::InProcess.server(app_path)
3.times { serve.call }
kept = nil # standard:disable Lint/UselessAssignment
GC.start
puts "booted: #{GC.stat(:heap_allocated_pages)} heap pages, #{GC.stat(:count)} GCs"
puts Herd::Heap.prepare(pack_descriptors: false)
puts Herd::Heap::PageDescriptors.pack unless ENV["PACK"] == "0"
puts Herd::Heap::Malloc.seal_free_chunks
sample = Herd::Memory.sample
puts format("process: RSS %.1f MiB, PSS %.1f MiB", sample.rss / 1048576.0, sample.pss / 1048576.0)

object_pages = {}
ObjectSpace.each_object(Object) { |object| object_pages[page_of.call(object)] = true }
ObjectSpace.each_object(Module) { |object| object_pages[page_of.call(object)] = true }
low, high = File.readlines("/proc/self/maps").find { |line| line.include?("[heap]") }.split.first.split("-").map { |hex| hex.to_i(16) }
frames = lambda do
  File.open("/proc/self/pagemap", "rb") do |pagemap|
    pagemap.seek(low / 4096 * 8)
    pagemap.read((high - low) / 4096 * 8).unpack("Q*").map { |entry| entry & ((1 << 55) - 1) }
  end
end

pid = Process.fork do
  before = frames.call
  GC.start(full_mark: false, immediate_sweep: true)
  after = frames.call
  copied = before.each_index.select { |i| before[i] != 0 && before[i] != after[i] }.map { |i| low + i * 4096 }
  in_objects = copied.count { |address| object_pages[address & ~(page_size - 1)] }
  puts format("fork's first GC: %d pages of [heap] copied (%.1f MiB), %d of them in object pages",
    copied.size, copied.size * 4096 / 1048576.0, in_objects)
  exit!(0)
end
Process.wait(pid)
