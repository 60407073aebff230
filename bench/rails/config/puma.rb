# frozen_string_literal: true

# Puma for bench/rails.rb: cluster mode, 4 workers x 1 thread (one request
# at a time per process, as herd and Pitchfork serve) forked from a master
# that preloaded the app.
workers Integer(ENV.fetch("BENCH_WORKERS", 4))
threads 1, 1
preload_app!
bind "tcp://127.0.0.1:#{ENV.fetch("BENCH_PORT")}"
