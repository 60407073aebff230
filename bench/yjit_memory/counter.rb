# frozen_string_literal: true

# The mechanism alone, without a server: a parent defines COUNT methods (herd demo's shape), calls each
# CALLS times, runs Process.warmup (or 4 GCs), forks; the child calls each method once and reports how
# much its Private_Dirty grew and its minor faults. With YJIT on, every call of a method YJIT has not
# compiled increments its ISEQ's jit_entry_calls (vm.c, jit_compile): a write to the ISEQ body, malloc'd
# in the parent, whatever the method does.
#   ruby bench/yjit_memory/counter.rb                                # YJIT off
#   ruby --yjit bench/yjit_memory/counter.rb 40                      # past the threshold, but "cold"
#   ruby --yjit --yjit-cold-threshold=1000000000 bench/yjit_memory/counter.rb 40   # compiled in the parent
COUNT = Integer(ENV.fetch("COUNT", 20_000))
CALLS = Integer(ARGV.fetch(0, "1"))

module Demo
  COUNT.times do |i|
    const_set(:"VALUE_#{i}", "value #{i}")
    module_eval "def self.lookup_#{i} = VALUE_#{i}", __FILE__, __LINE__
  end
end

NAMES = Array.new(COUNT) { |i| :"lookup_#{i}" }
CALLS.times { NAMES.each { |name| Demo.public_send(name) } }
Process.respond_to?(:warmup) ? Process.warmup : 4.times { GC.start }

def private_dirty = File.read("/proc/self/smaps_rollup")[/^Private_Dirty:\s+(\d+)/, 1].to_i
def minflt = File.read("/proc/self/stat").split(") ", 2).last.split[7].to_i
def jit = (defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?) ? RubyVM::YJIT.runtime_stats[:compiled_iseq_count] : "off"

reader, writer = IO.pipe
pid = fork do
  reader.close
  GC.disable # the child's own GC is not what is measured
  dirty = private_dirty
  faults = minflt
  NAMES.each { |name| Demo.public_send(name) }
  writer.puts format("ruby %s, YJIT compiled ISEQs %s, parent calls per method %d: child's Private_Dirty +%.1f MiB, %d minor faults, calling %d methods once",
    RUBY_VERSION, jit, CALLS, (private_dirty - dirty) / 1024.0, minflt - faults, COUNT)
  writer.close
  exit!(0)
end
writer.close
puts reader.read
Process.wait(pid)
