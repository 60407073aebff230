# frozen_string_literal: true

# herd's settings for the setup herd-sidekiq+yjit_late of bench/jobs.rb: the
# mold boots without YJIT (BENCH_JOBS_YJIT_LATE=1 turns off Rails'
# config.yjit) and each worker turns YJIT on after its fork, so that no
# worker inherits compiled blocks for its major GCs to copy.
after_fork { RubyVM::YJIT.enable }
