# frozen_string_literal: true

# Pitchfork for bench/rails.rb: 4 workers and its own refork schedule, the
# settings of its benchmark (examples/pitchfork.conf.minimal.rb).
worker_processes Integer(ENV.fetch("BENCH_WORKERS", 4))
# bench/refork.rb reforks by USR2 only.
refork_after((ENV["BENCH_REFORK_AFTER"] == "false") ? false : [50, 100, 1000])
listen "127.0.0.1:#{ENV.fetch("BENCH_PORT")}"
timeout 60
