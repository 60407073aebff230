# frozen_string_literal: true

# Puma for bench/http.rb: 2 workers, one thread each, preloaded (cluster mode).
workers 2
threads 1, 1
preload_app!
bind "tcp://127.0.0.1:#{ENV.fetch("BENCH_PORT")}"
