# frozen_string_literal: true

# Puma for bench/cow.rb: 4 workers x 1 thread forked from a preloaded master.
workers 4
threads 1, 1
preload_app!
bind "tcp://127.0.0.1:#{ENV.fetch("BENCH_PORT")}"
