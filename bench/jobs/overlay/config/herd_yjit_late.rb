# frozen_string_literal: true

# herd's settings for the setups herd-sidekiq+yjit_late and
# herd-solid_queue+yjit_late of bench/jobs.rb: the
# mold boots without YJIT (BENCH_JOBS_YJIT_LATE=1 turns off Rails'
# config.yjit) and each worker turns YJIT on after its fork, so that no
# worker inherits compiled blocks for its major GCs to copy.
after_fork do
  RubyVM::YJIT.enable
  # The check that it ran, in the setup's log.
  warn "bench/jobs: YJIT on in worker #{Process.pid}: #{RubyVM::YJIT.enabled?}"
end
