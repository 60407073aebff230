# frozen_string_literal: true

# What a new worker's first requests copy, and what that costs: on the
# Rails app of test/apps, one process tree per row:
#
#   the "worker": boots the app and serves WARM requests in process (the
#     worker a refork promotes), then times ROUNDS rounds of the five pages
#     of bench/refork/steps.rb (its warm cost per round);
#   the "mold": forked from it, runs Herd::Heap.prepare with the row's options;
#   the "new worker": forked from the mold, serves the same rounds. Before
#     and after its first round and after the last one it reads
#     /proc/self/pagemap, and sorts the pages that became its own: copies of
#     a shared page (copy-on-write) or fresh ones (zero-filled), and for the
#     copies, a page of Ruby object slots (the 16 KiB heap pages of Ruby 3.1,
#     64 KiB from 3.2), other memory of the brk heap (malloc's: strings,
#     tables, instruction sequences, caches), other anonymous memory, the stack.
#
#   test/apps/setup   # once
#   BUNDLE_GEMFILE=test/apps/Gemfile bundle exec ruby bench/refork/first_pages.rb [--reps N] [--warm N] [--rounds N]
#
# Writes bench/results/refork-first-pages.md and .json. Linux only (pagemap's
# "exclusively mapped" bit, Linux >= 4.2).

require "optparse"
require_relative "scaffold"
require_relative "../support/clock"
require_relative "../support/stats"

ROOT = ScaffoldInProcess::ROOT
ROWS = {
  "nothing" => nil,
  "promote + pack + seal (a promoted mold's default when compaction is not due)" => {compact: false, seal_malloc: true},
  "promote + compact + pack + seal (when it is due)" => {compact: true, seal_malloc: true},
  "promote + fill free slots + pack + seal" => {compact: false, fill_free_slots: true, seal_malloc: true},
  "seal only" => {compact: false, max_gc_runs: 0, pack_descriptors: false, seal_malloc: true},
  "promote only" => {compact: false, pack_descriptors: false, seal_malloc: false},
  # Not an option of Heap.prepare: the mold serves a round itself first
  # (as a booted mold's `warmup` does), then the default preparation.
  "a round in the mold, then promote + pack + seal" => {mold_rounds: 1, compact: false, seal_malloc: true}
}.freeze

options = {reps: 2, warm: 500, rounds: 120, cpu: "0", name: "refork-first-pages", referenced: false}
OptionParser.new do |opts|
  opts.on("--reps N", Integer, "runs per row (default 2)") { |n| options[:reps] = n }
  opts.on("--warm N", Integer, "requests the promoted worker served (default 500)") { |n| options[:warm] = n }
  opts.on("--rounds N", Integer, "rounds of the five pages in the new worker (default 120: 600 requests)") { |n| options[:rounds] = n }
  opts.on("--report-only JSON", "write the results again from an earlier run's JSON") { |path| options[:from] = path }
  opts.on("--name NAME", "results file name under bench/results (default refork-first-pages)") { |name| options[:name] = name }
  # Off by default: clearing the accessed bits may change what the round
  # costs on a host that emulates them.
  opts.on("--referenced", "also the memory the first round touched (clear_refs, then smaps' Referenced)") do
    options[:referenced] = true
  end
  # One CPU for every process of every row: this VM's two vCPUs change
  # speed within minutes, and a row that ran on the slow one looked 3x
  # slower than the next.
  opts.on("--cpu N", "the CPU every process runs on (taskset; default 0, 'any' for none)") { |n| options[:cpu] = n }
end.parse!

# The pages of a process's private writable mappings, each present page's
# state: true when this process alone maps it.
module PageMap
  module_function

  def mappings
    File.readlines("/proc/self/maps").filter_map do |line|
      range, perms, _offset, _dev, _inode, name = line.split(" ", 6)
      next unless perms.start_with?("rw") && perms[3] == "p"

      from, to = range.split("-").map { |hex| hex.to_i(16) }
      [from, to, name.to_s.strip.empty? ? "anon" : File.basename(name.strip)]
    end
  end

  # Snapshots go to memory from libc's malloc through Fiddle, one block
  # mapped apart from the mappings measured: a String buffer counts towards
  # Ruby's malloc limit, and 1 MiB or so of them set off a GC in the new
  # worker before its first round (its copies then left out of the round).
  # @return [Array(Integer, Array<Integer>)] the block and each snapshot's offset in it
  def buffers(maps, count)
    size = maps.sum { |from, to, _| ((to - from) >> 12) * 8 }
    block = libc("malloc", [Fiddle::TYPE_SIZE_T], Fiddle::TYPE_VOIDP).call(size * count).to_i
    [block, Array.new(count) { |i| i * size }]
  end

  # Fills snapshot `index` of `block` with the pagemap entries of `maps`.
  def snapshot(maps, block, offset)
    pread = libc("pread", [Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP, Fiddle::TYPE_SIZE_T, Fiddle::TYPE_LONG], Fiddle::TYPE_SSIZE_T)
    File.open("/proc/self/pagemap", "rb") do |file|
      maps.each do |from, to, _|
        length = ((to - from) >> 12) * 8
        pread.call(file.fileno, block + offset, length, (from >> 12) * 8)
        offset += length
      end
    end
  end

  def libc(name, args, ret)
    (@libc ||= {})[name] ||= Fiddle::Function.new(Fiddle::Handle::DEFAULT[name], args, ret)
  end

  # @return [Array<String>] each snapshot's entries, as Strings once measuring is done
  def strings(maps, block, offsets)
    size = maps.sum { |from, to, _| ((to - from) >> 12) * 8 }
    offsets.map do |offset|
      bytes = Fiddle::Pointer.new(block)[offset, size]
      at = 0
      maps.map do |from, to, _|
        length = ((to - from) >> 12) * 8
        bytes.byteslice(at, length).tap { at += length }
      end
    end
  end

  # @return [Hash{Integer => Array(String, Boolean)}] address => [mapping, exclusive], present pages only
  def decode(maps, buffers)
    pages = {}
    maps.each_with_index do |(from, _, name), i|
      buffers[i].unpack("Q*").each_with_index do |entry, j|
        pages[from + (j << 12)] = [name, entry[56] == 1] if entry[63] == 1 # present; exclusively mapped
      end
    end
    pages
  end

  # The pages that became this process's own between two snapshots, by kind.
  def became_own(before, after, slot_pages, page_size)
    after.each_with_object(Hash.new(0)) do |(address, (name, own)), kinds|
      next unless own && !before[address]&.last

      copied = before.key?(address)
      kind = if slot_pages[address & ~(page_size - 1)] then "object slots"
      elsif name == "[heap]" then "malloc (brk heap)"
      elsif name == "[stack]" then "stack"
      else "other anonymous"
      end
      kinds["#{copied ? "copied" : "fresh"}: #{kind}"] += 1
    end
  end
end

if ENV["FIRST_PAGES_CHILD"]
  require "fiddle"
  serve = ScaffoldInProcess.boot(ENV.fetch("FIRST_PAGES_APP"))
  faults = -> { File.read("/proc/self/stat").split(") ", 2).last.split[7].to_i }
  round = lambda do
    c, f = Bench::Clock.cpu, faults.call
    ScaffoldInProcess::PAGES.times(&serve)
    [((Bench::Clock.cpu - c) * 1000).round(2), faults.call - f]
  end
  rounds = Integer(ENV.fetch("FIRST_PAGES_ROUNDS"))
  Integer(ENV.fetch("FIRST_PAGES_WARM")).times(&serve)
  warm = 5.times.map { round.call }.drop(1).min_by(&:first) # the worker's own cost per round, at its best
  ActiveRecord::Base.connection_handler.clear_all_connections!
  heap_options = JSON.parse(ENV.fetch("FIRST_PAGES_OPTIONS"), symbolize_names: true)
  page_size = GC::INTERNAL_CONSTANTS.fetch(:HEAP_PAGE_SIZE, 65536)
  reader, writer = IO.pipe.each(&:binmode)
  mold = fork do
    reader.close
    mold_rounds = heap_options&.delete(:mold_rounds).to_i
    if mold_rounds.positive?
      mold_rounds.times { round.call }
      ActiveRecord::Base.connection_handler.clear_all_connections!
    end
    report = heap_options && Herd::Heap.prepare(**heap_options)
    r, w = IO.pipe.each(&:binmode)
    worker = fork do
      r.close
      maps = PageMap.mappings
      block, offsets = PageMap.buffers(maps, 3)
      later = Array.new(rounds - 1)
      uss_start = Herd::Memory.sample.uss
      gc_start = GC.stat(:minor_gc_count), GC.stat(:major_gc_count)
      PageMap.snapshot(maps, block, offsets[0])
      File.write("/proc/self/clear_refs", "1") if ENV["FIRST_PAGES_REFERENCED"]
      first = round.call
      referenced = File.read("/proc/self/smaps_rollup")[/^Referenced:\s+(\d+) kB/, 1].to_i if ENV["FIRST_PAGES_REFERENCED"]
      PageMap.snapshot(maps, block, offsets[1])
      (rounds - 1).times { |i| later[i] = round.call }
      PageMap.snapshot(maps, block, offsets[2])
      gcs = [GC.stat(:minor_gc_count) - gc_start[0], GC.stat(:major_gc_count) - gc_start[1]]
      # What the worker holds of its own after its rounds, before decoding
      # allocates; less the snapshots, its own too.
      uss = Herd::Memory.sample.uss - (((offsets[1] * 3) + 4095) & ~4095)
      start, after_first, after_all = PageMap.strings(maps, block, offsets).map { |buffers| PageMap.decode(maps, buffers) }
      # The slot pages, found last: walking the objects writes nothing.
      slot_pages = {}
      ObjectSpace.each_object { |object| slot_pages[Fiddle.dlwrap(object) & ~(page_size - 1)] = true }
      w.write(JSON.generate(first: first, later: [later.sum(&:first).round(1), later.sum(&:last)], gcs: gcs, uss: uss, uss_start: uss_start, referenced_kib: referenced,
        last_rounds: later.last(5).then { |tail| [tail.sum(&:first).fdiv(tail.size).round(2), tail.sum(&:last).fdiv(tail.size).round(1)] },
        first_kinds: PageMap.became_own(start, after_first, slot_pages, page_size),
        later_kinds: PageMap.became_own(after_first, after_all, slot_pages, page_size)))
      w.close
      exit!(0)
    end
    w.close
    data = JSON.parse(r.read)
    Process.wait(worker)
    writer.write(JSON.generate(data.merge(report: report.to_s)))
    exit!(0)
  end
  writer.close
  out = reader.read
  Process.wait(mold)
  puts JSON.generate(JSON.parse(out).merge(warm: warm))
  exit
end

abort "bench/refork/first_pages: Linux only (/proc/self/pagemap)" unless File.exist?("/proc/self/pagemap")
results = Hash.new { |h, k| h[k] = [] }
if options[:from]
  earlier = JSON.parse(File.read(options[:from]), symbolize_names: true)
  options = options.merge(earlier[:options].except(:name, :from))
  earlier[:results].each { |name, runs| results[name.to_s] = runs }
  run_date = earlier[:date]
  herd_revision = earlier[:herd]
  loadavg = earlier[:loadavg]
end
app = options[:from] ? nil : ScaffoldInProcess.generate
(options[:from] ? 0 : options[:reps]).times do |rep|
  ROWS.each do |name, heap_options|
    env = {"FIRST_PAGES_CHILD" => "1", "FIRST_PAGES_APP" => app, "FIRST_PAGES_WARM" => options[:warm].to_s,
           "FIRST_PAGES_ROUNDS" => options[:rounds].to_s, "FIRST_PAGES_OPTIONS" => JSON.generate(heap_options)}
    env["FIRST_PAGES_REFERENCED"] = "1" if options[:referenced]
    pin = (options[:cpu] == "any") ? [] : ["taskset", "-c", options[:cpu]]
    out, status = Open3.capture2(env, *pin, RbConfig.ruby, "-I", File.join(ROOT, "lib"), File.expand_path(__FILE__), chdir: app)
    abort "bench/refork/first_pages: #{name} failed" unless status.success?
    data = JSON.parse(out.lines.last, symbolize_names: true)
    results[name] << data
    warn format("rep %d %-78s warm %.1f ms; first round %.1f ms, %d faults; next %d rounds %.1f ms, %d faults; " \
      "last 5 rounds %.1f ms, %.0f faults each; GCs minor %d major %d; USS %.1f MiB (%.1f at the start)%s",
      rep + 1, name, data[:warm][0], *data[:first], options[:rounds] - 1, *data[:later], *data[:last_rounds], *data[:gcs],
      data[:uss] / 1048576.0, data[:uss_start] / 1048576.0,
      data[:referenced_kib] ? format("; first round touched %.1f MiB", data[:referenced_kib] / 1024.0) : "")
  end
end

median = Bench::Stats.method(:median)
kinds = results.values.flatten.flat_map { |r| r[:first_kinds].keys + r[:later_kinds].keys }.map(&:to_s).uniq.sort
fmt_kinds = lambda do |runs, key|
  kinds.filter_map do |kind|
    value = median.call(runs.map { |r| r[key][kind.to_sym].to_i }).round
    "#{kind} #{value}" if value.positive?
  end.join("; ")
end
touched = lambda do |runs, middle|
  kib = runs.filter_map { |r| r[:referenced_kib] }
  kib.empty? ? "" : format(", touched %.1f MiB", middle.call(kib) / 1024.0)
end
table = ROWS.keys.map do |name|
  runs = results[name]
  # CPU times as multiples of the promoted worker's round in the same run:
  # the vCPU's speed drifts from one run to the next, hardly within one.
  first_x = median.call(runs.map { |r| r[:first][0] / r[:warm][0] }).round(1)
  later_x = median.call(runs.map { |r| r[:later][0] / (r[:warm][0] * (options[:rounds] - 1)) }).round(2)
  [name, median.call(runs.map { |r| r[:warm][0] }),
    "#{first_x}×, #{median.call(runs.map { |r| r[:first][1] }).round} faults#{touched.call(runs, median)}",
    fmt_kinds.call(runs, :first_kinds),
    "#{later_x}× per round, #{median.call(runs.map { |r| r[:later][1] }).round} faults",
    fmt_kinds.call(runs, :later_kinds), "#{median.call(runs.map { |r| r[:last_rounds][0] / r[:warm][0] }).round(2)}×",
    runs.map { |r| r[:gcs].join("/") }.join(", "), (median.call(runs.map { |r| r[:uss] }) / 1048576.0).round(1)]
end
header = ["preparation in the mold", "a round in the promoted worker (ms CPU)", "the new worker's first round",
  "pages it made its own (4 KiB)", "its next #{options[:rounds] - 1} rounds", "pages those made its own",
  "its last 5 rounds", "its GCs, minor/major (each run)", "its USS after them (MiB)"]
command = "BUNDLE_GEMFILE=test/apps/Gemfile bundle exec ruby bench/refork/first_pages.rb --reps #{options[:reps]} " \
  "--warm #{options[:warm]} --rounds #{options[:rounds]} --cpu #{options[:cpu]}#{" --referenced" if options[:referenced]}" \
  "#{" --name #{options[:name]}" unless options[:name] == "refork-first-pages"}"
markdown = +"# bench/refork/first_pages: what a new worker's first requests copy\n\n"
run_date ||= Time.now.utc.strftime("%Y-%m-%dT%H:%M:%SZ")
herd_revision ||= `git -C #{ROOT} rev-parse --short HEAD`.strip
markdown << "- date: #{run_date}\n- herd: #{herd_revision}\n"
markdown << "- ruby: #{RUBY_DESCRIPTION}\n- uname -r: #{`uname -r`.strip}\n"
loadavg ||= File.read("/proc/loadavg").split.first(3).join(" ")
markdown << "- load average at the end: #{loadavg} (#{`nproc`.strip} cores)\n"
markdown << "- command: `#{command}`\n\n"
markdown << "A round is one GET of each of five pages (index, a record, a record's JSON, the index's JSON, the form), in\n"
markdown << "process; the promoted worker served #{options[:warm]} requests first. Medians of #{options[:reps]} runs, the rows\n"
markdown << "interleaved, #{(options[:cpu] == "any") ? "on any CPU" : "every process on CPU #{options[:cpu]}"}. CPU (user + system) is given as a\n"
markdown << "multiple of a round in the promoted worker of the same run (its milliseconds in the second column).\n\n"
markdown << "| #{header.join(" | ")} |\n| #{header.map { "---" }.join(" | ")} |\n"
table.each { |row| markdown << "| #{row.join(" | ")} |\n" }
path = File.join(ROOT, "bench/results", options[:name])
File.write("#{path}.json", JSON.pretty_generate(command: command, date: run_date, herd: herd_revision, loadavg: loadavg,
  options: options.except(:from), results: results))
notes = File.join(__dir__, "FIRST_PAGES.md")
File.write("#{path}.md", markdown + (File.exist?(notes) ? "\n#{File.read(notes)}" : ""))
puts markdown
warn "wrote #{path}.md"
