#!/bin/bash
# What `out_of_band_gc` costs and saves on bench/cow's lazy app
# (docs/COPY_ON_WRITE.md, "A worker's garbage"):
#
#   bench/cow/gc_budget.sh [BUDGET...]     (default: false 50_000 100_000 200_000)
#
# For each budget, twice: herd serve with 4 workers and refork_after
# [50, 100, 1000], ab -c 4 -n 500, 10 s, Σ PSS of the tree; ab -c 4 -n 1000
# (its request rate), 5 s, Σ PSS again. Needs ab (apache2-utils); uses
# 127.0.0.1:$PORT (default 9393). One line per run on stdout.
set -euo pipefail
cd "$(dirname "$0")/../.."
port=${PORT:-9393}
budgets=("$@")
[ ${#budgets[@]} -gt 0 ] || budgets=(false 50_000 100_000 200_000)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sum_pss() { bundle exec ruby -Ilib -rherd/memory -e 'printf "%.1f", Herd::Memory.tree(Integer(ARGV[0])).total.pss / 1048576.0' "$1"; }
for budget in "${budgets[@]}"; do
  printf 'workers 4\nrefork_after [50, 100, 1000]\ntimeout 120\nout_of_band_gc %s\n' "$budget" > "$work/herd.rb"
  for rep in 1 2; do
    RACK_ENV=production bundle exec exe/herd serve bench/cow/lazy_caches.ru -c "$work/herd.rb" -l "127.0.0.1:$port" > "$work/log" 2>&1 &
    monitor=$!
    for _ in $(seq 1 240); do grep -q "monitor: ready" "$work/log" && break; sleep 0.5; done
    ab -q -c 4 -n 500 "http://127.0.0.1:$port/" > /dev/null 2>&1
    sleep 10
    warm=$(sum_pss $monitor)
    rate=$(ab -q -c 4 -n 1000 "http://127.0.0.1:$port/" 2>&1 | awk '/Requests per second/ {print $4}')
    sleep 5
    after=$(sum_pss $monitor)
    echo "out_of_band_gc $budget, run $rep: Σ PSS after the warm-up $warm MiB; ab -n 1000: $rate req/s; after those $after MiB"
    kill -TERM $monitor
    wait $monitor || true
  done
done
