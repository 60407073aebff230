# frozen_string_literal: true

# Unicorn for bench/http.rb: 2 workers forked from a preloaded master.
worker_processes 2
preload_app true
listen "127.0.0.1:#{ENV.fetch("BENCH_PORT")}"
