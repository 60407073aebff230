# frozen_string_literal: true

# Pitchfork for bench/cow.rb: its own benchmark's settings
# (examples/pitchfork.conf.minimal.rb); the driver sets BENCH_PORT.
worker_processes 4
refork_after [50, 100, 1000]
listen "127.0.0.1:#{ENV.fetch("BENCH_PORT")}"
timeout 120
