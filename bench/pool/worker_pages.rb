# frozen_string_literal: true

# What a two-item Herd.map's workers cost on their own, against a bare fork
# doing the least a pool worker can (read nothing, send one marshalled
# integer, exit!): the memory each child touches from its first moment to
# its exit (smaps' Referenced, after clearing the accessed bits), its CPU
# time and its page faults. On a VM that charges a new process for every
# page it first touches (bench/refork/FIRST_PAGES.md: 5-11 µs each here,
# uncounted as faults), the touched memory is what a call costs above the
# machine's floor.
#
#   bundle exec ruby bench/pool/worker_pages.rb [--calls N] [--name NAME]
#
# The probe: Process._fork (Ruby's hook) clears the child's accessed bits as
# the child starts; herd's worker is read as it leaves (WorkerSetup#leave_worker),
# the bare fork before its exit!. Reading smaps_rollup touches a little of
# its own, the same in both.
require "optparse"
require "socket"
require "tmpdir"
require "time"
require_relative "../../lib/herd"
require_relative "../support/clock"
require_relative "../support/stats"

options = {calls: 30, name: nil}
OptionParser.new do |opts|
  opts.on("--calls N", Integer, "calls measured per variant (default 30)") { |n| options[:calls] = n }
  opts.on("--name NAME", "write bench/results/NAME.md") { |name| options[:name] = name }
end.parse!

module WorkerPages
  STAT_MINFLT = 9 # /proc/self/stat, 0-based, after the command

  module_function

  def referenced_kib = File.read("/proc/self/smaps_rollup")[/^Referenced:\s+(\d+)/, 1].to_i

  def faults = File.read("/proc/self/stat").split(") ").last.split[STAT_MINFLT - 2].to_i

  # Clearing the accessed bits walks every page table entry, and on this
  # VM setting them again may cost too: CPU and faults are measured in a
  # pass of their own, without it.
  def start!(mode)
    if mode == "refs"
      File.write("/proc/self/clear_refs", "1")
    else
      @start = [Bench::Clock.cpu, faults]
    end
  end

  # Appended to `path`, one Marshal record per child.
  def finish!(path, mode)
    return unless path

    record = (mode == "refs") ? [referenced_kib] : [(Bench::Clock.cpu - @start[0]) * 1000, faults - @start[1]]
    File.open(path, "ab") { |file| file.write(Marshal.dump(record)) }
  end

  def records(path)
    File.open(path, "rb") { |file| [].tap { |all| all << Marshal.load(file) until file.eof? } }
  end
end

# The child's first moment, whoever forks it.
module WorkerPagesFork
  def _fork
    pid = super
    WorkerPages.start!(ENV["WORKER_PAGES_MODE"]) if pid.zero? && ENV["WORKER_PAGES_OUT"]
    pid
  end
end
Process.singleton_class.prepend(WorkerPagesFork)

module WorkerPagesLeave
  def leave_worker(status)
    WorkerPages.finish!(ENV["WORKER_PAGES_OUT"], ENV["WORKER_PAGES_MODE"])
    super
  end
end
Herd::Pool::WorkerSetup.prepend(WorkerPagesLeave)

def bare_call
  pairs = Array.new(2) { UNIXSocket.pair }
  pids = pairs.each_with_index.map do |(mine, theirs), number|
    fork do
      mine.close
      theirs.write(Marshal.dump(number + 1))
      WorkerPages.finish!(ENV["WORKER_PAGES_OUT"], ENV["WORKER_PAGES_MODE"])
      exit!(0)
    end
  end
  pairs.each do |mine, theirs|
    theirs.close
    Marshal.load(mine.read)
    mine.close
  end
  pids.each { |pid| Process.wait(pid) }
end

variants = {
  "bare fork (fork, one Marshal.dump written to a socketpair, exit!)" => -> { bare_call },
  "herd, prepare_heap: false" => -> { Herd.map([1, 2], processes: 2, prepare_heap: false) { _1 } }
}
GC.start
rows = Dir.mktmpdir("worker-pages") do |dir|
  variants.map do |label, call|
    3.times { call.call } # the parent's caches, its first copies
    measured = %w[cpu refs].to_h do |mode|
      path = File.join(dir, "#{label.hash}-#{mode}.bin")
      ENV["WORKER_PAGES_OUT"] = path
      ENV["WORKER_PAGES_MODE"] = mode
      options[:calls].times { call.call }
      [mode, WorkerPages.records(path)]
    ensure
      ENV.delete("WORKER_PAGES_OUT")
    end
    cpu, refs = measured.values_at("cpu", "refs")
    [label, cpu.size, Bench::Stats.median(refs.map(&:first)).round, Bench::Stats.median(cpu.map(&:first)),
      Bench::Stats.median(cpu.map(&:last)).round]
  end
end

table = +"| worker | children | memory touched (KiB) | CPU (ms) | page faults |\n| --- | --- | --- | --- | --- |\n"
rows.each { |label, n, kib, cpu, flt| table << "| #{label} | #{n} | #{kib} | #{cpu.round(2)} | #{flt} |\n" }
puts table
if options[:name]
  path = File.join(__dir__, "..", "results", "#{options[:name]}.md")
  File.write(path, <<~MD)
    # Pool: what one worker touches

    - date: #{Time.now.utc.iso8601}
    - ruby -v: `#{RUBY_DESCRIPTION}`
    - uname -r: `#{`uname -r`.strip}`
    - herd: #{`git rev-parse --short HEAD`.strip}
    - command: `bundle exec ruby bench/pool/worker_pages.rb --calls #{options[:calls]} --name #{options[:name]}`

    Each child from its first moment (Process._fork's return) to its exit: memory it touched
    (smaps' Referenced after clearing the accessed bits), CPU time, minor page faults (these two in a
    pass of their own, without the clearing); medians over every child of #{options[:calls]} calls of
    two children each, per pass.

    #{table}
  MD
  puts "wrote #{path}"
end
