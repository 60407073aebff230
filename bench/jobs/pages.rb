# frozen_string_literal: true

# Which code copies a forked process's pages, and whether the copy holds the parent's bytes.
#
# A worker forked from a mold shares every page until it writes one; the write faults (copy on
# write) and the worker holds the copy alone. `perf record -e page-faults -c 1 -d --call-graph dwarf`
# records each of those faults with its address and the stack that wrote. This script reads the
# worker's pages that it holds alone (bench/yjit_memory/maps.rb's kinds), compares each with the
# reference process's page at the same address (`same`: the worker wrote the values the page had;
# `changed`), and joins them with perf's faults: per writer (the first frame outside glibc's
# memcpy/memset family, or the innermost `depth` frames), the pages it first wrote, same or changed.
#
# Usage (root, or the same user with ptrace allowed; Linux):
#   # 1. record the worker's faults while it works
#   perf record -e page-faults -c 1 -d --call-graph dwarf,16384 -p WORKER -o faults.data &
#   ... let the worker run jobs ..., then kill -INT the perf pid
#   # 2. its pages against the mold's, while both still run
#   ruby bench/jobs/pages.rb pages WORKER MOLD > pages.tsv
#   # 3. the join
#   perf script -i faults.data -F tid,addr,ip,sym > faults.txt
#   ruby bench/jobs/pages.rb faults pages.tsv faults.txt [--depth 6] [--kind malloc_main]
#
# `pages` prints one line per page the process holds alone: address (hex), kind, same/changed/-.
require_relative "../yjit_memory/maps"

module JobsPages
  PAGE = YjitMemoryMaps::PAGE
  HEAP_PAGE_SIZE = 65536

  module_function

  # @yield [address, kind, state] each page pid holds alone (state :same, :changed, or nil without a reference page)
  def each_own_page(pid, ref_pid)
    YjitMemoryMaps.each_page(pid, heap_page_size: HEAP_PAGE_SIZE, ref_pid: ref_pid) do |address, kind, entry, mapping, pair|
      next unless mapping.anon? && entry & YjitMemoryMaps::EXCLUSIVE != 0

      mine, theirs = pair.call
      state = (mine == theirs) ? :same : :changed if mine && theirs
      yield address, kind, state, entry
    end
  end

  def pages(pid, ref_pid)
    each_own_page(pid, ref_pid) { |address, kind, state| puts format("%x %s %s", address, kind, state || "-") }
  end

  # Frames of glibc's copy/fill routines and of the fault path itself say nothing of who wrote.
  GENERIC = /\A(__memcpy|__memmove|__memset|memcpy|memmove|memset|__mempcpy|__strcpy|__stpcpy|\[unknown\])/

  # perf script -F tid,addr,ip,sym: a header line "tid addr" then one frame per line "ip sym (dso)"
  def each_fault(path)
    fault = nil
    File.foreach(path) do |line|
      if line =~ /\A\s*(\d+)\s+([0-9a-f]+)(\s|\z)/
        yield fault if fault
        fault = {tid: Integer($1), addr: Integer($2, 16), frames: []}
      elsif fault && line =~ /\A\s+([0-9a-f]+)\s+(\S+)/
        fault[:frames] << $2.sub(/\+0x[0-9a-f]+\z/, "")
      end
    end
    yield fault if fault
  end

  def faults(pages_path, faults_path, depth: 6, kind: nil)
    state = {}
    kinds = {}
    File.foreach(pages_path) do |line|
      address, k, s = line.split
      state[Integer(address, 16)] = s.to_sym
      kinds[Integer(address, 16)] = k.to_sym
    end
    seen = {}
    tally = Hash.new { |h, key| h[key] = Hash.new(0) }
    each_fault(faults_path) do |fault|
      page = fault[:addr] & ~(PAGE - 1)
      next if seen[page] || !state.key?(page)
      next if kind && kinds[page] != kind

      seen[page] = true
      frames = fault[:frames].drop_while { |f| f =~ GENERIC }
      key = frames.first(depth).join(" < ")
      tally[key][state[page]] += 1
      tally[key][:total] += 1
    end
    unfaulted = state.keys.reject { |p| seen[p] || (kind && kinds[p] != kind) }
    totals = Hash.new(0)
    tally.each_value { |t| t.each { |k, v| totals[k] += v } }
    puts "    same  changed        -  writer (MiB of first writes)"
    tally.sort_by { |_, t| -t[:same] }.first(40).each do |key, t|
      puts format("%8.2f %8.2f %8.2f  %s", t[:same] * PAGE / 1048576.0, t[:changed] * PAGE / 1048576.0, t[:-] * PAGE / 1048576.0, key)
    end
    puts format("%8.2f %8.2f %8.2f  all faulted pages", totals[:same] * PAGE / 1048576.0, totals[:changed] * PAGE / 1048576.0,
      totals[:-] * PAGE / 1048576.0)
    by = unfaulted.group_by { |p| state[p] }.transform_values { |v| v.size * PAGE / 1048576.0 }
    puts format("%8.2f %8.2f %8.2f  held alone, no fault recorded (written before perf attached)", by[:same] || 0, by[:changed] || 0,
      by[:-] || 0)
  end
end

if $PROGRAM_NAME == __FILE__
  case ARGV.shift
  when "pages" then JobsPages.pages(Integer(ARGV[0]), ARGV[1] && Integer(ARGV[1]))
  when "faults"
    depth = (i = ARGV.index("--depth")) ? Integer(ARGV.delete_at(i + 1).tap { ARGV.delete_at(i) }) : 6
    kind = (i = ARGV.index("--kind")) ? ARGV.delete_at(i + 1).tap { ARGV.delete_at(i) }.to_sym : nil
    JobsPages.faults(ARGV[0], ARGV[1], depth: depth, kind: kind)
  else abort "usage: ruby bench/jobs/pages.rb pages PID [REF_PID] | faults PAGES FAULTS [--depth N] [--kind KIND]"
  end
end
