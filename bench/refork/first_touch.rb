# frozen_string_literal: true

# What a forked process pays to read memory it shares with its parent, the
# first time: a parent fills a 200 MiB String, forks, and the child reads
# one byte of each 4 KiB page twice. fork copies the page table entries, so
# on hardware (or a VM whose MMU walks the guest's page tables itself) the
# first pass costs what the second does. Where the hypervisor keeps shadow
# page tables, each page a new process touches costs it an exit the guest
# does not count as a fault: every new worker then pays that for its whole
# working set, whatever it copies. Run it to know which kind of host you
# measure on (bench/refork/FIRST_PAGES.md).
#
#   ruby bench/refork/first_touch.rb [MiB]

require_relative "../support/clock"

mib = Integer(ARGV[0] || 200)
data = "x" * (mib << 20)
pages = data.bytesize / 4096
read_pass = lambda do
  started = Bench::Clock.now
  sum = 0
  i = 0
  while i < pages
    sum += data.getbyte(i * 4096)
    i += 1
  end
  Bench::Clock.now - started
end
faults = -> { File.read("/proc/self/stat").split(") ", 2).last.split[7].to_i }
read_pass.call # the parent's own first pass
parent = read_pass.call
reader, writer = IO.pipe
pid = fork do
  reader.close
  before = faults.call
  first = read_pass.call
  second = read_pass.call
  writer.write([first, second, faults.call - before].join(" "))
  writer.close
  exit!(0)
end
writer.close
first, second, child_faults = reader.read.split.map(&:to_f)
Process.wait(pid)
per_page = ->(seconds) { format("%.2f µs/page", seconds * 1e6 / pages) }
puts format("%d MiB, %d pages: parent %.1f ms (%s); child's first pass %.1f ms (%s), %d page faults; " \
  "its second pass %.1f ms (%s)", mib, pages, parent * 1000, per_page.call(parent), first * 1000, per_page.call(first),
  child_faults, second * 1000, per_page.call(second))
