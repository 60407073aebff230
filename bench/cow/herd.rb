# frozen_string_literal: true

# herd for bench/cow.rb: 4 workers, reforking on Pitchfork's benchmark
# schedule. The driver passes `-l 127.0.0.1:0` and reads the port from the log.
workers 4
refork_after [50, 100, 1000]
timeout 120
