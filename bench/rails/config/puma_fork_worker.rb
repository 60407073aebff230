# frozen_string_literal: true

# Puma for bench/rails.rb with fork_worker at its default (1000): workers
# 1-3 are forked again from worker 0 once it has served 1,000 requests. The
# master does not preload (docs/fork_worker.md: that is what makes phased
# restarts work in this mode; Puma 8 would preload by default otherwise).
workers Integer(ENV.fetch("BENCH_WORKERS", 4))
threads 1, 1
fork_worker
preload_app! false
bind "tcp://127.0.0.1:#{ENV.fetch("BENCH_PORT")}"
