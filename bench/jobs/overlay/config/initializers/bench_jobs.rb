# frozen_string_literal: true

# Copied into the Rails app by bench/jobs.rb.
#
# BENCH_JOBS_ADAPTER=sidekiq: Active Job enqueues to Sidekiq (the app as
# `rails new` makes it uses Solid Queue, config/environments/production.rb).
if ENV["BENCH_JOBS_ADAPTER"] == "sidekiq"
  Rails.application.config.active_job.queue_adapter = :sidekiq
  ActiveSupport.on_load(:active_job) { self.queue_adapter = :sidekiq }
end

# BENCH_JOBS_HERD_FORK=1: herd's fork hook in this process (bin/jobs's
# supervisor loads the app before it forks its workers), and one line per
# fork in tmp/bench_herd_fork.log, written by the child, saying what the
# heap preparation did before it: the check that it ran.
if ENV["BENCH_JOBS_HERD_FORK"] == "1"
  require "herd/fork"
  Herd.after_fork do
    report = Herd::ForkHook.last_report
    summary = report ? report.to_h.slice(:strategy, :gc_runs, :compacted, :filled, :sealed).inspect : "no heap preparation"
    File.write(Rails.root.join("tmp/bench_herd_fork.log").to_s, "#{Process.pid} #{Process.ppid} #{summary}\n", mode: "a")
  end
end

# BENCH_JOBS_YJIT_LATE=1: the app boots without YJIT (Rails turns it on at the
# end of boot when config.yjit is set); herd's workers turn it on after
# their fork (config/herd_yjit_late.rb).
Rails.application.config.yjit = false if ENV["BENCH_JOBS_YJIT_LATE"] == "1"
