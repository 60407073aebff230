# frozen_string_literal: true

# What a worker's own pages (USS) are made of, against the mold it was forked
# from (docs/COPY_ON_WRITE.md, "What a Rails worker's memory is made of"):
#
#   ruby bench/rails/worker_pages.rb WORKER_PID MOLD_PID
#
# Needs no root: /proc/PID/pagemap's bit 56 (the page is mapped by this
# process only) is readable by the owner, its frame numbers are not needed.
# Reads the worker's pagemap first, then the contents of its own pages and
# the mold's at the same addresses (/proc/PID/mem, same user). Ruby 3.1's
# object pages are found by their header: a 16 KiB-aligned page whose first
# word points at a descriptor whose `start` field points back into it.
# Slots of object pages are compared 40 bytes at a time, the type read from
# the flags word, so no code runs in the worker.
PAGE = 4096
OBJECT_PAGE = 16_384
SLOT = 40
START = 32 # struct heap_page's `start` (Herd::Heap::PageDescriptors::Layout::START)

worker, mold = ARGV.map { |arg| Integer(arg) }
abort "usage: ruby bench/rails/worker_pages.rb WORKER_PID MOLD_PID" unless worker && mold

Mapping = Struct.new(:from, :to, :perms, :name)
def mappings(pid)
  File.readlines("/proc/#{pid}/maps").map do |line|
    range, perms, _offset, _device, _inode, name = line.split(" ", 6)
    from, to = range.split("-").map { |hex| hex.to_i(16) }
    Mapping.new(from, to, perms, name.to_s.strip)
  end
end

def read(file, address, size = PAGE)
  file.seek(address)
  file.read(size)
rescue Errno::EIO, Errno::EFAULT, Errno::EINVAL, RangeError # not mapped, or not an address
  nil
end

maps = mappings(worker)
own = [] # [address, mapping]
File.open("/proc/#{worker}/pagemap", "rb") do |pagemap|
  maps.each do |map|
    entries = read(pagemap, map.from / PAGE * 8, (map.to - map.from) / PAGE * 8).to_s.unpack("Q*")
    entries.each_with_index { |entry, i| own << [map.from + i * PAGE, map] if entry[63] == 1 && entry[56] == 1 }
  end
end
worker_mem = File.open("/proc/#{worker}/mem", "rb")
mold_mem = File.open("/proc/#{mold}/mem", "rb")
contents = own.to_h { |address, _| [address, [read(worker_mem, address), read(mold_mem, address)]] }

object_pages = {}
maps.each do |map|
  next unless map.name.empty? && map.perms.start_with?("rw")

  body = (map.from + OBJECT_PAGE - 1) & -OBJECT_PAGE
  while body + OBJECT_PAGE <= map.to
    descriptor = read(worker_mem, body, 8)&.unpack1("Q")
    start = descriptor && descriptor > PAGE && read(worker_mem, descriptor + START, 8)&.unpack1("Q")
    object_pages[body] = true if start && start >= body && start < body + OBJECT_PAGE
    body += OBJECT_PAGE
  end
end
mold_top = mappings(mold).select { |map| map.name == "[heap]" }.map(&:to).max || 0

rows = Hash.new { |hash, key| hash[key] = {pages: 0, identical: 0} }
slots = Hash.new(0)
own.each do |address, map|
  mine, molds = contents[address]
  category =
    if object_pages[address & -OBJECT_PAGE] then "Ruby object pages"
    elsif map.name == "[heap]" then (address < mold_top) ? "malloc heap, below the mold's top" : "malloc heap, above the mold's top"
    elsif map.name.empty? then "other anonymous mappings"
    else "stack, libraries, files"
    end
  rows[category][:pages] += 1
  rows[category][:identical] += 1 if mine && mine == molds
  next unless category == "Ruby object pages" && mine && molds

  first = (address + SLOT - 1) / SLOT * SLOT
  (first...(address + PAGE - SLOT + 1)).step(SLOT) do |slot|
    now, before = [mine, molds].map { |page| page.byteslice(slot - address, SLOT).unpack("Q5") }
    next if now == before

    type, was = now[0] & 0x1f, before[0] & 0x1f
    change =
      if was.zero? && !type.zero? then "object in a slot free in the mold"
      elsif type.zero? then "free slot (freed, or relinked)"
      elsif now[1] != before[1] then "slot reused by another object"
      elsif now[1..] == before[1..] then "old object, header only (age, flags)"
      else "old object, fields written"
      end
    slots[change] += 1
  end
end

mib = ->(pages) { format("%6.2f", pages * PAGE / 1_048_576.0) }
puts "worker #{worker} against mold #{mold}: #{mib.call(own.size)} MiB of its own"
puts "#{"".ljust(36)}   MiB  identical to the mold's"
rows.sort_by { |_, row| -row[:pages] }.each do |name, row|
  puts "#{name.ljust(36)} #{mib.call(row[:pages])}  #{mib.call(row[:identical])}"
end
puts "\nslots of its own object pages that differ from the mold's:"
slots.sort_by { |_, count| -count }.each { |kind, count| puts format("%9d  %s", count, kind) }
