# frozen_string_literal: true

# What each step of a promoted mold's heap preparation buys and costs, on
# the Rails app of test/apps, one process tree at a time:
#
#   the "worker": boots the app and serves WARM requests in process (the
#     worker promoted to be the next mold, as warm as that);
#   the "mold": forked from it, runs Herd::Heap.prepare with one set of
#     options (timed: wall, user and system CPU; then its USS: what it
#     copied from the worker, memory the refork holds while both live);
#   2 "workers": forked from the mold, 600 requests each; their USS is what
#     each worker of that generation costs on its own.
#
#   test/apps/setup   # once
#   BUNDLE_GEMFILE=test/apps/Gemfile bundle exec ruby bench/refork/steps.rb [--reps N]
#
# Writes bench/results/refork-steps.md. One set of options per fresh Ruby
# (the app booted again each time), the sets interleaved rep by rep.

require "optparse"
require_relative "scaffold"
require_relative "../support/clock"
require_relative "../support/stats"

ROOT = ScaffoldInProcess::ROOT
STEPS = {
  "nothing" => nil,
  "promote (minor GCs)" => {compact: false, pack_descriptors: false, seal_malloc: false},
  "promote + pack descriptors" => {compact: false, seal_malloc: false},
  "promote + seal malloc" => {compact: false, pack_descriptors: false, seal_malloc: true},
  "promote + pack + seal (prepare_heap compact: false)" => {compact: false, seal_malloc: true},
  "promote + compact + pack + seal (a promoted mold's default)" => {compact: true, seal_malloc: true},
  "promote + fill free slots + pack + seal" => {compact: false, fill_free_slots: true, seal_malloc: true}
}.freeze
COLD = ["promote + pack + seal (prepare_heap compact: false)", "promote + compact + pack + seal (a promoted mold's default)"].freeze

options = {reps: 2, warm: 5}
OptionParser.new do |opts|
  opts.on("--reps N", Integer, "runs per row (default 2)") { |n| options[:reps] = n }
end.parse!

if ENV["STEPS_CHILD"]
  serve = ScaffoldInProcess.boot(ENV.fetch("STEPS_APP"))
  Integer(ENV.fetch("STEPS_WARM")).times(&serve)
  ActiveRecord::Base.connection_handler.clear_all_connections!
  heap_options = JSON.parse(ENV.fetch("STEPS_OPTIONS"), symbolize_names: true)
  reader, writer = IO.pipe.each(&:binmode)
  mold = fork do
    reader.close
    t0 = Bench::Clock.now
    c0 = Process.times
    report = heap_options && Herd::Heap.prepare(**heap_options)
    c1 = Process.times
    wall = Bench::Clock.now - t0
    mold_uss = Herd::Memory.sample.uss
    workers = 2.times.map do
      r, w = IO.pipe.each(&:binmode)
      pid = fork do
        r.close
        600.times(&serve)
        w.write(Herd::Memory.sample.uss.to_s)
        exit!(0)
      end
      w.close
      [pid, r]
    end
    uss = workers.map { |pid, r| r.read.to_i.tap { Process.wait(pid) } }
    writer.write(JSON.generate(wall: wall, user: c1.utime - c0.utime, sys: c1.stime - c0.stime, mold_uss: mold_uss,
      workers_uss: uss, report: report.to_s))
    exit!(0)
  end
  writer.close
  out = reader.read
  Process.wait(mold)
  puts out
  exit
end

app = ScaffoldInProcess.generate
rows = (STEPS.keys.map { |name| [name, options[:warm]] } + COLD.map { |name| [name, 0] })
results = Hash.new { |h, k| h[k] = [] }
options[:reps].times do |rep|
  rows.each do |name, warm|
    env = {"STEPS_CHILD" => "1", "STEPS_APP" => app, "STEPS_WARM" => warm.to_s, "STEPS_OPTIONS" => JSON.generate(STEPS[name])}
    out, status = Open3.capture2(env, RbConfig.ruby, "-I", File.join(ROOT, "lib"), File.expand_path(__FILE__), chdir: app)
    abort "bench/refork/steps: #{name} failed" unless status.success?
    data = JSON.parse(out.lines.last, symbolize_names: true)
    results[[name, warm]] << data
    warn format("rep %d %-62s warm %d: CPU %.2f s, mold USS %.1f MiB, workers %s MiB", rep + 1, name, warm,
      data[:user] + data[:sys], data[:mold_uss] / 1048576.0, data[:workers_uss].map { |u| (u / 1048576.0).round(1) }.inspect)
  end
end

mib = ->(bytes) { (bytes / 1048576.0).round(1) }
median = Bench::Stats.method(:median)
table = rows.map do |name, warm|
  runs = results[[name, warm]]
  cpu = runs.map { |r| r[:user] + r[:sys] }
  [name, (warm == 0) ? "cold (booted, no request)" : "#{warm} requests",
    "#{median.call(cpu).round(2)} (#{runs.map { |r| r[:user].round(2) }.join("/")} user, #{runs.map { |r| r[:sys].round(2) }.join("/")} sys)",
    mib.call(median.call(runs.map { |r| r[:mold_uss] })), mib.call(median.call(runs.flat_map { |r| r[:workers_uss] })),
    runs.map { |r| r[:workers_uss].map(&mib).join(", ") }.join("; ")]
end
header = ["preparation in the mold", "the worker it forks from", "mold CPU (s)", "mold USS (MiB)", "worker USS after 600 requests (MiB, median)", "every worker"]
markdown = +"# bench/refork/steps: what each step of a mold's heap preparation buys and costs\n\n"
markdown << "- date: #{Time.now.utc.strftime("%Y-%m-%dT%H:%M:%SZ")}\n- herd: #{`git -C #{ROOT} rev-parse --short HEAD`.strip}\n"
markdown << "- ruby: #{RUBY_DESCRIPTION}\n- load average at the end: #{File.read("/proc/loadavg").split.first(3).join(" ")} (2 cores)\n"
markdown << "- command: `BUNDLE_GEMFILE=test/apps/Gemfile bundle exec ruby bench/refork/steps.rb --reps #{options[:reps]}`\n\n"
markdown << "| #{header.join(" | ")} |\n| #{header.map { "---" }.join(" | ")} |\n"
table.each { |row| markdown << "| #{row.join(" | ")} |\n" }
path = File.join(ROOT, "bench/results/refork-steps.md")
notes = File.join(__dir__, "STEPS.md")
File.write(path, markdown + (File.exist?(notes) ? "\n#{File.read(notes)}" : ""))
puts markdown
warn "wrote #{path}"
