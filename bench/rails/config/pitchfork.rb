# frozen_string_literal: true

# Pitchfork for bench/rails.rb: 4 workers and its own refork schedule, the
# settings of its benchmark (examples/pitchfork.conf.minimal.rb).
worker_processes Integer(ENV.fetch("BENCH_WORKERS", 4))
# bench/refork.rb reforks by USR2 only: no refork_after at all (Pitchfork
# 0.18 takes no `false` there; without the setting USR2 still reforks).
refork_after [50, 100, 1000] unless ENV["BENCH_REFORK_AFTER"] == "false"
listen "127.0.0.1:#{ENV.fetch("BENCH_PORT")}"
timeout 60
