# frozen_string_literal: true

# Copied into the Rails app by bench/jobs.rb, and run there as
#   bin/rails runner script/bench_enqueue.rb
# with the adapter of the setup under test. It boots once, says so, then
# reads commands on stdin, one a line: "mixed COUNT" or "cpu COUNT". For
# each it builds the jobs, enqueues them with ActiveJob.perform_all_later
# (Solid Queue: all in one call, one insert, its queue keeps their order;
# Sidekiq: SLICE at a time, since its adapter pushes a bulk per class and
# the classes must stay mixed in the queue), and answers
#   BENCH enqueued KIND COUNT T0 T1
# T0 and T1 being CLOCK_MONOTONIC just before and after the enqueue (the
# driver reads the same clock). The mixed batch repeats database, render,
# database, render, cpu: 40 % / 40 % / 20 %.
# The flush matters: the app's boot leaves a line in STDOUT's buffer (a
# warning about libvips), and on this Ruby later writes of a sync IO are
# appended to a buffer that is not empty instead of written.
$stdout.sync = true
$stdout.flush
clock = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }
SLICE = 50
mixed = [DatabaseJob, RenderJob, DatabaseJob, RenderJob, CpuJob]
puts "BENCH ready #{ActiveJob::Base.queue_adapter.class.name} #{RUBY_VERSION} " \
  "yjit=#{(defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?) ? 1 : 0}"
while (line = $stdin.gets)
  kind, count = line.split
  count = Integer(count)
  jobs = case kind
  when "mixed" then Array.new(count) { |i| mixed[i % mixed.size].new(i) }
  when "cpu" then Array.new(count) { |i| CpuJob.new(i) }
  else abort "bench_enqueue: no such batch #{kind}"
  end
  started = clock.call
  slice = ActiveJob::Base.queue_adapter.class.name.include?("Sidekiq") ? SLICE : jobs.size
  jobs.each_slice(slice) { |some| ActiveJob.perform_all_later(some) }
  finished = clock.call
  # Sidekiq's adapter does not set successfully_enqueued: the driver counts the jobs that ran.
  puts format("BENCH enqueued %s %d %.6f %.6f", kind, jobs.size, started, finished)
end
