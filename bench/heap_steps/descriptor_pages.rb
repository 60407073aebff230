# frozen_string_literal: true

# Where a fork's first GC writes on Ruby 3.1, with the GC's page descriptors
# packed and without (docs/HEAP_STEPS.md, "GC page descriptors"):
#
#   /usr/bin/ruby bench/heap_steps/descriptor_pages.rb [--no-lambdas]
#
# Builds bench/heap_steps' heap (with --no-lambdas, its records hold no
# lambda), promotes, compacts and fills it as bench/heap_steps.rb's "+
# seal_malloc" variant does, then either packs the descriptors and seals
# malloc or only seals, and forks a child that runs GC.start. The child
# reads /proc/self/pagemap before and after its GC: the pages that became
# its own (bit 56) are what the GC copied, sorted into object pages, pages
# holding a descriptor now, pages that held one before packing, and the
# rest of malloc's [heap] and of anonymous memory (which include what the
# first reading itself allocated). Each configuration in a fresh Ruby.

$LOAD_PATH.unshift File.expand_path("../../lib", __dir__)
require "json"
require "rbconfig"
require "fiddle"
require "herd/heap/steps"
require_relative "app_heap"

abort "Ruby 3.1 only: #{Herd::Heap::PageDescriptors.unsupported}" if Herd::Heap::PageDescriptors.unsupported

PAGE = 4096
MIB = 1048576.0
HEAP_PAGE = GC::INTERNAL_CONSTANTS.fetch(:HEAP_PAGE_SIZE)
DESCRIPTOR = 352 # sizeof(struct heap_page) on 64-bit CRuby 3.1

# @return [Array(Hash, Hash)] object page bodies; 4 KiB pages holding a descriptor
def layout
  bodies = {}
  ObjectSpace.each_object(BasicObject) { |object| bodies[Fiddle.dlwrap(object) & -HEAP_PAGE] = true }
  pages = {}
  bodies.each_key do |body|
    address = Fiddle::Pointer.new(body)[0, Fiddle::SIZEOF_VOIDP].unpack1("J")
    (address / PAGE..(address + DESCRIPTOR - 1) / PAGE).each { |page| pages[page] = true }
  end
  [bodies, pages]
end

# @return [Hash] page number => mapping name, for every page only this process maps
def own_pages
  pages = {}
  File.open("/proc/self/pagemap", "rb") do |pagemap|
    File.readlines("/proc/self/maps").each do |line|
      range, _perms, _offset, _device, _inode, name = line.split(" ", 6)
      next if name.to_s.include?("[vsyscall]")

      first, last = range.split("-").map { |hex| hex.to_i(16) }
      pagemap.seek(first / PAGE * 8)
      pagemap.read((last - first) / PAGE * 8).unpack("Q*").each_with_index do |entry, i|
        pages[first / PAGE + i] = name.to_s.strip if entry[63] == 1 && entry[56] == 1
      end
    end
  end
  pages
end

def measure(pack, lambdas)
  app = HeapStepsBench::AppHeap.build(1.0, lambdas: lambdas)
  Herd::Heap.prepare(process_warmup: false, compact: true, fill_free_slots: true, pack_descriptors: false)
  bodies, before = layout
  packed = pack ? Herd::Heap::PageDescriptors.pack.to_s : "not packed"
  _, after = layout
  GC.start(full_mark: false) # the garbage layout made
  sealed = Herd::Heap::Malloc.seal_free_chunks.to_s
  reader, writer = IO.pipe
  pid = Process.fork do
    mine = own_pages
    GC.start
    copied = own_pages.reject { |page, _| mine.key?(page) }
    kinds = Hash.new(0)
    copied.each do |page, name|
      kind = if bodies[page * PAGE & -HEAP_PAGE] then "object pages"
      elsif after[page] then "descriptor pages"
      elsif before[page] then "pages that held a descriptor before packing"
      elsif name == "[heap]" then "rest of malloc's [heap]"
      else "other anonymous memory"
      end
      kinds[kind] += PAGE
    end
    writer.write(JSON.generate(kinds))
    exit!(0)
  end
  writer.close
  kinds = JSON.parse(reader.read)
  Process.wait(pid)
  app.clear
  {packed: packed, sealed: sealed, kinds: kinds}
end

if ARGV.first == "--one"
  puts JSON.generate(measure(ARGV[1] == "pack", ARGV[2] == "lambdas"))
  exit
end

lambdas = !ARGV.include?("--no-lambdas")
puts "#{RUBY_DESCRIPTION}; records #{lambdas ? "with" : "without"} lambdas"
%w[seal pack].each do |mode|
  out = IO.popen([RbConfig.ruby, __FILE__, "--one", mode, lambdas ? "lambdas" : "none"], &:read)
  result = JSON.parse(out)
  puts "#{mode}: #{result["packed"]}; #{result["sealed"]}"
  result["kinds"].sort_by { |_, bytes| -bytes }.each { |kind, bytes| puts format("  %-45s %6.2f MiB", kind, bytes / MIB) }
  puts format("  %-45s %6.2f MiB", "total", result["kinds"].values.sum / MIB)
end
