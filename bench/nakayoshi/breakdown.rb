# frozen_string_literal: true

require "fiddle"

# Where a forked child's private pages are: pages of Ruby objects, pages of
# the GC's per-page metadata (`struct heap_page`, which holds the mark and
# other bitmaps), and everything else.
#
# Reads /proc/self/pagemap, whose bit 56 ("mapped by this process only") any
# user may read since Linux 4.2. Relies on MRI's heap layout as of 3.1/3.2:
# each heap page body is aligned to HEAP_PAGE_SIZE and begins with a pointer
# to its `struct heap_page`, which is malloc'd separately.
module Breakdown
  PAGE = 4096
  HEAP_PAGE_SIZE = GC::INTERNAL_CONSTANTS.fetch(:HEAP_PAGE_SIZE)
  CHUNK = 512 # pagemap entries read at a time

  module_function

  # Call in the parent before forking.
  # @return [Hash] :bodies (heap page body address => true) and :meta_pages
  #   (4 KiB page number => true) for the `struct heap_page`s
  def heap_layout
    bodies = {}
    ObjectSpace.each_object(BasicObject) { |obj| bodies[Fiddle.dlwrap(obj) & -HEAP_PAGE_SIZE] = true }
    metas = bodies.keys.map { |body| Fiddle::Pointer.new(body)[0, Fiddle::SIZEOF_VOIDP].unpack1("J") }
    # malloc hands out the structs back to back: the usual gap is their size.
    size = metas.sort.each_cons(2).map { |a, b| b - a }.tally.max_by(&:last)&.first || 1024
    meta_pages = {}
    metas.each { |addr| (addr / PAGE..(addr + size - 1) / PAGE).each { |page| meta_pages[page] = true } }
    {bodies: bodies, meta_pages: meta_pages, struct_size: size}
  end

  # Call in the child. Allocates little, so as not to count itself.
  # @return [Hash] bytes mapped only by this process, by kind
  def classify(layout)
    counts = Hash.new(0)
    buffer = String.new(capacity: CHUNK * 8)
    File.open("/proc/self/pagemap", "rb") do |pagemap|
      mappings.each do |first, last, name|
        (first...last).step(CHUNK * PAGE) do |addr|
          pagemap.seek(addr / PAGE * 8)
          pagemap.read([CHUNK, (last - addr) / PAGE].min * 8, buffer)
          (buffer.bytesize / 8).times do |i|
            flags = buffer.getbyte(i * 8 + 7) # bits 56..63, little-endian
            next unless flags & 0x81 == 0x81 # present (63) and exclusive (56)

            counts[kind(addr + i * PAGE, name, layout)] += PAGE
          end
        end
      end
    end
    rollup = File.read("/proc/self/smaps_rollup")[/^Private_Dirty:\s+(\d+) kB/, 1].to_i * 1024
    {private_dirty: rollup, heap_pages: layout[:bodies].size, heap_page_size: HEAP_PAGE_SIZE,
     struct_size: layout[:struct_size], **counts}
  end

  def kind(addr, name, layout)
    if layout[:bodies][addr & -HEAP_PAGE_SIZE]
      :object_heap
    elsif layout[:meta_pages][addr / PAGE]
      :gc_page_metadata
    elsif name.empty? || name == "[heap]"
      :other_anonymous
    else
      :other_mappings
    end
  end

  # @return [Array<Array>] first address, end address, name
  def mappings
    File.readlines("/proc/self/maps").filter_map do |line|
      range, _perms, _offset, _device, _inode, name = line.split(" ", 6)
      name = name.to_s.strip
      next if name == "[vsyscall]"

      first, last = range.split("-").map { |hex| hex.to_i(16) }
      [first, last, name]
    end
  end
end
