# frozen_string_literal: true

# What the kernel's page merging (KSM, herd's `ksm` setting) takes back of
# the pages a forked child's major GC writes with the bytes they had: on
# Ruby 3.4 with YJIT, YJIT's records of the parent's compiled code
# (docs/COPY_ON_WRITE.md, "Merging identical pages: `ksm`").
#
#   export PATH=/root/.herd/rubies/3.4.5/bin:$PATH
#   RUBY_YJIT_ENABLE=1 ruby bench/jobs/ksm_major_gc.rb [METHODS] [CHILDREN] [WAIT_S]
#
# Needs Linux >= 6.4 and ksmd running (as root: echo 1 > /sys/kernel/mm/ksm/run).
# Two runs, each in a fresh parent: without KSM, then with it asked for
# (bench/support/ksm_exec.rb: prctl PR_SET_MEMORY_MERGE, as `ksm true` does in herd's monitor). The
# parent defines METHODS methods (default 20,000) and calls each 40 times
# in a row (YJIT compiles them), runs 3 GCs and forks CHILDREN (4); each
# child runs one major GC. Prints Σ PSS of the parent and children right
# after the GCs and WAIT_S (30) seconds later, and ksmd's CPU meanwhile.
require "rbconfig"
require_relative "../support/ksm"

methods, children, wait = ARGV.map { |arg| Integer(arg) }
methods ||= 20_000
children ||= 4
wait ||= 30

if ENV["KSM_MAJOR_GC_CHILD"]
  pss = ->(pid) { File.read("/proc/#{pid}/smaps_rollup")[/^Pss:\s+(\d+)/, 1].to_i / 1024.0 }
  mod = Module.new
  methods.times { |i| mod.module_eval("def m#{i}(x) = (x > 10) ? x - #{i % 7} : x + 1", __FILE__, __LINE__) }
  obj = Object.new.extend(mod)
  methods.times { |i| 40.times { |r| obj.send(:"m#{i}", r - 5) } }
  3.times { GC.start }
  done_r, done_w = IO.pipe
  pids = Array.new(children) do
    fork do
      GC.start(full_mark: true, immediate_sweep: true)
      done_w.write("x")
      sleep
    end
  end
  done_r.read(children)
  sleep 1
  tree = -> { pss.call(Process.pid) + pids.sum { |pid| pss.call(pid) } }
  cpu = Bench::KSM.cpu_seconds
  after_gc = tree.call
  sleep wait
  puts format("%-8s Σ PSS after the children's major GC %.1f MiB, %d s later %.1f MiB; ksmd CPU meanwhile %.2f s",
    (ENV["KSM"] == "1") ? "ksm" : "no ksm", after_gc, wait, tree.call, Bench::KSM.cpu_seconds - cpu)
  pids.each { |pid| Process.kill(:KILL, pid) }
  Process.waitall
  exit
end

abort "ksm_major_gc: ksmd does not run (as root: echo 1 > #{Bench::KSM::DIR}/run)" unless Bench::KSM.running?
jit = defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?
puts "ruby #{RUBY_VERSION}, YJIT #{jit ? "on" : "off"}, #{methods} methods, #{children} children; " \
  "ksmd: #{Bench::KSM.settings.map { |key, value| "#{key} #{value}" }.join(", ")}"
%w[0 1].each do |ksm|
  command = [RbConfig.ruby, __FILE__, methods.to_s, children.to_s, wait.to_s]
  system({"KSM_MAJOR_GC_CHILD" => "1", "KSM" => ksm}, *((ksm == "1") ? Bench::KSM.wrap(command) : command)) or exit(1)
end
