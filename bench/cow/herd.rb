# frozen_string_literal: true

# herd for bench/cow.rb: 4 workers, reforking as Pitchfork's benchmark does.
workers 4
refork_after [50, 100, 1000]
listen "127.0.0.1:#{ENV.fetch("BENCH_PORT", "0")}"
timeout 120
