# frozen_string_literal: true

# What a lower RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO costs a worker in CPU
# (bench/cow's herd-tuned variant; docs/COPY_ON_WRITE.md):
#
#   RACK_ENV=production bundle exec ruby bench/cow/gc_ratio_cpu.rb [ROUNDS] [REQUESTS] [APP.ru ...]
#
# Ruby reads its GC settings once, at start, so every sample is a fresh
# Ruby: it loads the app, serves 60 requests, prepares its heap as a
# promoted mold does, then forks a child that serves REQUESTS requests
# (default 1,000) in-process, collecting between requests as a worker does
# (out_of_band_gc 200,000), and reports its CPU time per request, its GC
# count and time, and its heap pages. Each ratio runs ROUNDS times (default
# 5), interleaved; medians are printed, with min-max. Apps (APP.ru or
# APP.ru:PATH) default to bench/cow's three and bench/http's shop page.
$stdout.sync = true
require "json"
require "rbconfig"
require_relative "../support/stats"

ROOT = File.expand_path("../..", __dir__)
RATIOS = [nil, "0.25"].freeze # nil: Ruby's default (0.65)

if ENV["HERD_GC_RATIO_SAMPLE"]
  $LOAD_PATH.unshift File.join(ROOT, "lib")
  require "herd/heap"
  require "herd/cluster/out_of_band_gc"
  require_relative "in_process"

  app_path, path = ARGV.fetch(0).split(":", 2)
  requests = Integer(ARGV.fetch(1))
  serve = CowBench::InProcess.server(app_path, path || "/")
  60.times { serve.call }
  Herd::Heap.prepare(seal_malloc: true, compact: true)
  reader, writer = IO.pipe
  pid = Process.fork do
    reader.close
    gc = Herd::Cluster::OutOfBandGC.new(Herd::Cluster::OutOfBandGC::DEFAULT_OBJECTS)
    count = GC.count
    time = GC.stat(:time)
    cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
    sys = Process.times.stime
    requests.times do
      serve.call
      gc.between_requests
    end
    cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - cpu
    sys = Process.times.stime - sys
    writer.write(JSON.generate(cpu_ms: cpu * 1000.0 / requests, sys_ms: sys * 1000.0 / requests, gcs: GC.count - count,
      gc_ms: GC.stat(:time) - time, pages: GC.stat(:heap_allocated_pages)))
    exit!(0)
  end
  writer.close
  print reader.read
  Process.wait(pid)
  exit
end

rounds = Integer(ARGV[0] || 5)
requests = Integer(ARGV[1] || 1_000)
apps = ARGV[2..].to_a
apps = %w[bench/cow/lazy_caches.ru bench/cow/measuring.ru bench/cow/constant_caches.ru bench/http/shop.ru:/products?page=2] if apps.empty?

apps.each do |app|
  samples = Hash.new { |hash, key| hash[key] = [] }
  rounds.times do |round|
    (round.even? ? RATIOS : RATIOS.reverse).each do |ratio|
      env = {"HERD_GC_RATIO_SAMPLE" => "1", "RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO" => ratio}
      out = IO.popen(env, [RbConfig.ruby, __FILE__, File.expand_path(app, ROOT), requests.to_s], chdir: ROOT, &:read)
      samples[ratio] << JSON.parse(out, symbolize_names: true)
    end
  end
  puts "#{app}: #{requests} requests per sample, #{rounds} rounds"
  samples.each do |ratio, runs|
    cpu = runs.map { |run| run[:cpu_ms] }
    printf("  max ratio %-8s cpu/request %.2f ms (%.2f-%.2f), of which system %.2f  GCs %d  GC time %d ms  pages %d\n",
      ratio || "default", Bench::Stats.median(cpu), cpu.min, cpu.max, Bench::Stats.median(runs.map { |run| run[:sys_ms] }),
      Bench::Stats.median(runs.map { |run| run[:gcs] }),
      Bench::Stats.median(runs.map { |run| run[:gc_ms] }), Bench::Stats.median(runs.map { |run| run[:pages] }))
  end
end
