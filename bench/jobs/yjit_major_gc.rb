# frozen_string_literal: true

# Does a major GC in a forked child copy the parent's YJIT metadata pages, writing them with the
# values they had? (Ruby 3.4's YJIT marks each compiled block's outgoing branches through
# MutableBranchList::for_each, which moves the list out of its Cell and back: a write to every
# block, on every GC that marks its ISEQ, i.e. every major GC for an old ISEQ.)
#
# Usage (Linux, reads /proc/PID/pagemap and /proc/PID/mem of its own child):
#   RUBY_YJIT_ENABLE=1 ruby bench/jobs/yjit_major_gc.rb [METHODS] [major|minor|none]
#   ruby bench/jobs/yjit_major_gc.rb 20000 major            # the same without YJIT
# The parent defines METHODS methods (default 20,000), calls each 40 times (YJIT compiles it past its
# call threshold of 30), runs 3 GCs, forks; the child runs one GC of the kind asked (or none), and
# the parent prints what the child then holds alone of glibc's main heap and of the Ruby heap,
# `same` (the parent's bytes) or `changed`, in MiB.
# With PERF_OUT=DIR set, perf records the child's page faults around its GC (DIR/faults.data) and the
# child's pages go to DIR/pages.tsv: then `perf script -i DIR/faults.data -F tid,addr,ip,sym >
# DIR/faults.txt; ruby bench/jobs/pages.rb faults DIR/pages.tsv DIR/faults.txt --depth 6` names the writers.
require_relative "pages"

count = Integer(ARGV[0] || 20_000)
kind = ARGV[1] || "major"
mod = Module.new
count.times do |i|
  mod.module_eval(<<~RUBY, __FILE__, __LINE__ + 1)
    def m#{i}(x)
      if x > 10 then x - #{i % 7} elsif x < 0 then -x else x + 1 end
    end
  RUBY
end
obj = Object.new.extend(mod)
count.times { |i| 40.times { |r| obj.send(:"m#{i}", r - 5) } } # in a row: within YJIT's cold threshold
3.times { GC.start }
jit = defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?
compiled = jit ? RubyVM::YJIT.runtime_stats[:compiled_iseq_count] : 0
blocks = jit ? RubyVM::YJIT.runtime_stats[:compiled_block_count] : 0

ready_r, ready_w = IO.pipe
go_r, go_w = IO.pipe
child = fork do
  ready_w.write("r")
  go_r.read(1)
  before = GC.stat(:major_gc_count)
  case kind
  when "major" then GC.start(full_mark: true, immediate_sweep: true)
  when "minor" then GC.start(full_mark: false, immediate_sweep: true)
  end
  ready_w.write((GC.stat(:major_gc_count) - before).to_s)
  sleep
end
ready_r.read(1)
GC.disable # the parent's own writes would make the child's copies of those pages its own too
if (out = ENV["PERF_OUT"])
  Dir.mkdir(out) unless Dir.exist?(out)
  perf = spawn("perf", "record", "-q", "-e", "page-faults", "-c", "1", "-d", "--call-graph", "dwarf,4096", "-m", "16M",
    "-p", child.to_s, "-o", File.join(out, "faults.data"), err: File.join(out, "perf.err"))
  sleep 2
end
go_w.write("g")
majors = ready_r.read(1)
if perf
  Process.kill(:INT, perf)
  Process.wait(perf)
  File.open(File.join(out, "pages.tsv"), "w") do |file|
    JobsPages.each_own_page(child, Process.pid) { |address, k, state| file.puts format("%x %s %s", address, k, state || "-") }
  end
end
totals = Hash.new(0)
JobsPages.each_own_page(child, Process.pid) do |_address, page_kind, state|
  totals[[page_kind, state || :-]] += JobsPages::PAGE
end
Process.kill(:KILL, child)
Process.wait(child)
mib = ->(k, s) { format("%.1f", totals[[k, s]] / 1048576.0) }
puts "ruby #{RUBY_VERSION} yjit=#{jit ? 1 : 0} methods=#{count} compiled_iseqs=#{compiled} blocks=#{blocks} child GC: #{kind} (majors #{majors})"
%i[malloc_main ruby_heap other_anon].each do |k|
  puts format("  %-12s own: same %6s changed %6s MiB", k, mib.call(k, :same), mib.call(k, :changed))
end
