# frozen_string_literal: true

# Puma for bench/cow.rb with fork_worker: workers 1-3 are forked from worker 0
# once it has served 100 requests (as ../shared/research/measured.md did).
# The driver sets BENCH_PORT.
workers 4
threads 1, 1
fork_worker 100
preload_app! false # Puma 8 preloads in the master by default; fork_worker does not need it
bind "tcp://127.0.0.1:#{ENV.fetch("BENCH_PORT")}"
