# frozen_string_literal: true

# Copied into the Rails app by bench/jobs.rb: the base of the benchmark's
# jobs. Each job appends one line to tmp/bench_jobs.log when it ends (the
# driver counts them to know when a batch is drained, and reads when the
# last one ended): the CLOCK_MONOTONIC of its end, its pid, its class, its
# wall and thread-CPU milliseconds, the major GCs its process ran since its
# first job (a forked child's count starts with its parent's, which this
# leaves out), and "ok" or the error it raised. An
# error is recorded, not raised: a retry would run it again later and blur
# the batch's end.
class BenchJob < ApplicationJob
  LOG = Rails.root.join("tmp/bench_jobs.log").to_s
  # pid => GC.stat(:major_gc_count) at the process's first job.
  MAJORS_AT_FIRST_JOB = {}
  LOCK = Mutex.new

  def self.major_gcs
    majors = GC.stat(:major_gc_count)
    majors - LOCK.synchronize { MAJORS_AT_FIRST_JOB[Process.pid] ||= majors }
  end

  around_perform do |job, block|
    BenchJob.major_gcs
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    cpu = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
    outcome = begin
      block.call
      "ok"
    rescue => e
      "error #{e.class}: #{e.message.lines.first.to_s.strip[0, 200]}"
    end
    ended = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    cpu = Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID) - cpu
    line = format("%.6f %d %s %.2f %.2f %d %s\n", ended, Process.pid, job.class.name, (ended - started) * 1000, cpu * 1000,
      BenchJob.major_gcs, outcome)
    File.write(LOG, line, mode: "a")
  end
end
