# frozen_string_literal: true

# bench/cow's constant app without a server: a parent loads it (100,000 constants and lookup methods),
# runs BEFORE "requests" (App.warmup, every method once), optionally GC.start / GC.compact /
# Process.warmup, forks; the child runs AFTER requests and stops; a fresh Ruby then classifies the
# child's pages against the parent's (bench/yjit_memory/maps.rb), so neither process allocates while
# it is read. YJIT as the environment says (RUBY_YJIT_ENABLE, RUBYOPT).
#
#   export PATH=/root/.herd/rubies/3.4.5/bin:$PATH
#   RUBY_YJIT_ENABLE=1 ruby bench/yjit_memory/fork_constant.rb 50 50              # the parent below 120 calls
#   RUBY_YJIT_ENABLE=1 RUBYOPT=--yjit-cold-threshold=1000000000 ruby bench/yjit_memory/fork_constant.rb 50 50
#   RUBY_YJIT_ENABLE=1 RUBYOPT=--yjit-cold-threshold=1000000000 ruby bench/yjit_memory/fork_constant.rb 130 50
#   ruby bench/yjit_memory/fork_constant.rb 130 50 compact                       # then GC.compact before the fork
#
# Prints one line: the parent's compiled ISEQs, the child's before/after, and the child's own pages
# (USS) per kind, with how much of them differ from the parent's.
require "json"
require "rbconfig"
$LOAD_PATH.unshift File.expand_path("../cow", __dir__)
require "constant_app"

before = Integer(ARGV.fetch(0, "50"))
after = Integer(ARGV.fetch(1, "50"))
step = ARGV.fetch(2, "none") # none, gc, compact, warmup

def jit
  return "off" unless defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?

  RubyVM::YJIT.runtime_stats[:compiled_iseq_count]
end

before.times { App.warmup }
case step
when "gc" then GC.start
when "compact" then GC.compact
when "warmup" then Process.warmup
end
parent_jit = jit

reader, writer = IO.pipe
go_reader, go_writer = IO.pipe
pid = fork do
  reader.close
  go_writer.close
  after.times { App.warmup }
  writer.puts JSON.generate(jit: jit, gc: GC.count)
  writer.close
  go_reader.read # until the parent is done reading us
  exit!(0)
end
writer.close
go_reader.close
child = JSON.parse(reader.gets)
maps = File.expand_path("maps.rb", __dir__)
heap_page = GC::INTERNAL_CONSTANTS.fetch(:HEAP_PAGE_SIZE, 16 << 10)
script = "require #{maps.dump}; require 'json'; " \
  "puts JSON.generate(YjitMemoryMaps.classify(#{pid}, heap_page_size: #{heap_page}, ref_pid: #{Process.pid}))"
kinds = JSON.parse(IO.popen({"RUBY_YJIT_ENABLE" => nil, "RUBYOPT" => nil}, [RbConfig.ruby, "-e", script], &:read))
go_writer.close
Process.wait(pid)

mib = ->(bytes) { format("%.1f", bytes / 1048576.0) }
shown = kinds.select { |_, v| v["uss"] >= 100 << 10 }.map do |kind, v|
  "#{kind} #{mib.call(v["uss"])} (changed #{mib.call(v["changed"])}, #{mib.call(v["diff_bytes"])} of it differing bytes)"
end
total = kinds.values.sum { |v| v["uss"] }
puts format("%s YJIT %s, RUBYOPT=%s: parent %d requests, %s, compiled ISEQs %s; child %d requests, compiled %s, GCs +%d: " \
  "child USS %s MiB: %s", RUBY_VERSION, (defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?) ? "on" : "off", ENV["RUBYOPT"].inspect,
  before, step, parent_jit, after, child["jit"], child["gc"] - GC.count, mib.call(total), shown.join(", "))
