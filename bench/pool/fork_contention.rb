# frozen_string_literal: true

# What two processes running at once cost each other on this machine, with
# no pool involved: bare forks of this process each run half of the 64-item
# job of bench/pool.rb --only call (32 x Loads.cpu(12)), one alone, then two
# together, three times. Each child reports its wall time, its minor faults
# and its user and system CPU from /proc/self/stat.
#
#   bundle exec ruby bench/pool/fork_contention.rb [ROUNDS_PER_ITEM]
#
# On the 2-core VM of docs/POOL.md, one child took 86-90 ms and two at once
# 120-130 ms each, with the same 600-700 faults but 30-50 ms of system time
# instead of 0-10: a job this short cannot reach 2x there, whoever forks.
require_relative "loads"
require_relative "../support/clock"

rounds = Integer(ARGV.fetch(0, 12))
items = Array.new(32, rounds)
tick_ms = 1000.0 / 100 # USER_HZ
stat = lambda do
  fields = File.read("/proc/self/stat").split(") ").last.split
  [fields[7].to_i, fields[11].to_i, fields[12].to_i] # minflt, utime, stime
end
items.each { PoolBench::Loads.cpu(_1) } # warm the parent, as bench/pool does

run = lambda do |count|
  reader, writer = IO.pipe
  started = Bench::Clock.now
  pids = Array.new(count) do
    fork do
      reader.close
      faults, user, system = stat.call
      t = Bench::Clock.now
      items.each { PoolBench::Loads.cpu(_1) }
      elapsed = Bench::Clock.now - t
      faults2, user2, system2 = stat.call
      writer.write(format("%.1f ms, %d faults, user %d ms, system %d ms\n", elapsed * 1000, faults2 - faults,
        (user2 - user) * tick_ms, (system2 - system) * tick_ms))
      exit!(0)
    end
  end
  writer.close
  pids.each { Process.wait(_1) }
  total = Bench::Clock.now - started
  puts format("%d at once: %.1f ms in all; %s", count, total * 1000, reader.read.split("\n").join(" | "))
end

3.times do
  run.call(1)
  run.call(2)
end
t = Bench::Clock.now
items.each { PoolBench::Loads.cpu(_1) }
puts format("the parent, the same 32 items: %.1f ms", (Bench::Clock.now - t) * 1000)
