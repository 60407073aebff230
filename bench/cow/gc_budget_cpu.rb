# frozen_string_literal: true

# CPU per request of a fork of a promoted mold under each `out_of_band_gc`
# budget (docs/COPY_ON_WRITE.md, "A worker's garbage"):
#
#   RACK_ENV=production bundle exec ruby bench/cow/gc_budget_cpu.rb [APP.ru] [ROUNDS]
#
# Loads the app (bench/cow/lazy_caches.ru by default), serves 60 requests,
# prepares the heap as a promoted mold does, then for each budget (false,
# 200,000, 100,000, 50,000, or BUDGETS="false 20000 10000"; ROUNDS times,
# default 3, interleaved) forks a
# child that serves 250 requests in-process, collecting between requests as
# a worker does, and prints its CPU time per request, GC count and GC time
# per request. Read the GC time, and the minimum CPU per budget: CPU time on
# a shared VM is noisy (the same child varies by up to 2x), GC time much less.
#
# Runs under herd's GC settings, as `herd serve` runs its workers
# (Herd::Cluster::RubyGCDefaults; a variable set in the environment wins).
$stdout.sync = true
$LOAD_PATH.unshift File.expand_path("../../lib", __dir__)
require "herd/cluster/ruby_gc_defaults"
missing = Herd::Cluster::RubyGCDefaults.missing(ENV)
exec(missing, RbConfig.ruby, __FILE__, *ARGV) unless missing.empty?
require "herd/heap"
require "herd/cluster/out_of_band_gc"
require_relative "in_process"

app_path = ARGV[0] || File.join(__dir__, "lazy_caches.ru")
rounds = Integer(ARGV[1] || 3)
REQUESTS = 250
serve = CowBench::InProcess.server(app_path)
60.times { serve.call }
Herd::Heap.prepare(seal_malloc: true, compact: true)

cpu = -> { Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) }
budgets = [false, 200_000, 100_000, 50_000]
budgets = ENV["BUDGETS"].split.map { |b| (b == "false") ? false : Integer(b) } if ENV["BUDGETS"]
(budgets * rounds).each do |budget|
  reader, writer = IO.pipe
  pid = Process.fork do
    reader.close
    gc = Herd::Cluster::OutOfBandGC.new(budget) if budget
    started = cpu.call
    count = GC.count
    gc_time = GC.stat(:time) # ms, Ruby >= 3.1
    REQUESTS.times do
      serve.call
      gc&.between_requests
    end
    per_request = (cpu.call - started) * 1000 / REQUESTS
    writer.puts format("out_of_band_gc %-7s %6.2f ms CPU per request, %3d GCs in %d requests, %5.2f ms GC per request",
      budget, per_request, GC.count - count, REQUESTS, (GC.stat(:time) - gc_time).fdiv(REQUESTS))
    exit!(0)
  end
  writer.close
  print reader.read
  Process.wait(pid)
end
