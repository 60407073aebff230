# frozen_string_literal: true

# Unicorn for bench/cow.rb: 4 workers forked from a preloaded master.
worker_processes 4
preload_app true
listen "127.0.0.1:#{ENV.fetch("BENCH_PORT")}"
timeout 120
