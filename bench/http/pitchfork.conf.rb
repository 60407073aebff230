# frozen_string_literal: true

# Pitchfork for bench/http.rb: 2 workers (the driver sets BENCH_PORT).
worker_processes 2
listen "127.0.0.1:#{ENV.fetch("BENCH_PORT")}"
