#!/bin/bash
# Which code copies a gen-2 `herd sidekiq` worker's pages, and whether the copies hold its mold's
# bytes (bench/results/jobs-worker-pages.md). Needs root (perf, /proc/PID/mem), perf, redis-server,
# Ruby 3.4.5 in $RUBY_BIN, and a copy of bench/jobs' Rails app ($TEMPLATE: the app bench/jobs.rb
# prepares, with its script/bench_enqueue.rb and app/jobs).
#
#   bench/jobs/pages_run.sh OUTDIR [yjit|nojit]
#
# Runs `herd sidekiq -w 4` (refork_after [50, 100, 1000]) on a fresh copy of the app ($APP), 3,000
# mixed jobs, waits for the gen-2 workers, then records one gen-2 worker's page faults (perf, with
# stacks) over 1,500 more jobs and over one forced major GC (a GcJob added to the copy), and writes
# OUTDIR/pages0.tsv (before), pages1.tsv (after the jobs), pages.tsv (after the major GC), gc_jobs.log
# (each worker's GC counts) and faults.txt; then prints the writers of the worker's own glibc
# main-heap pages, same or changed (bench/jobs/pages.rb faults). nojit: `config.yjit = false` in
# the copy and RUBY_YJIT_ENABLE unset. Stops its herd and redis-server on exit.
set -e
OUT=$1; MODE=${2:-yjit}
[ -n "$OUT" ] || { echo "usage: $0 OUTDIR [yjit|nojit]" >&2; exit 2; }
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
TEMPLATE=${TEMPLATE:-/tmp/jobs-app-template}; APP=${APP:-/tmp/jobs-pages-app}
RUBY_BIN=${RUBY_BIN:-/root/.herd/rubies/3.4.5/bin}
RPID=; HPID=; PERF=
source "$HERE/app_run.sh"
app_prepare
cat > "$APP/app/jobs/gc_job.rb" <<'RUBY'
# frozen_string_literal: true
# bench/jobs/pages_run.sh: logs this process's GC counts, then runs a major GC when asked
class GcJob < ApplicationJob
  def perform(major)
    s = GC.stat
    jit = defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?
    line = format("%d major=%d minor=%d by=%s yjit=%s compiled_iseqs=%s\n", Process.pid, s[:major_gc_count], s[:minor_gc_count],
      GC.latest_gc_info(:major_by).inspect, jit, jit ? RubyVM::YJIT.runtime_stats[:compiled_iseq_count] : "-")
    File.write(Rails.root.join("tmp/gc_jobs.log").to_s, line, mode: "a")
    GC.start(full_mark: true, immediate_sweep: true) if major
  end
end
RUBY
if [ "$MODE" = nojit ]; then
  sed -i "s/^\(\s*config.load_defaults.*\)$/\1\n    config.yjit = false/" "$APP/config/application.rb"
fi
export RUBY_YJIT_ENABLE=1
[ "$MODE" = nojit ] && unset RUBY_YJIT_ENABLE
cleanup() {
  [ -n "$PERF" ] && kill -INT "$PERF" 2>/dev/null && wait "$PERF" 2>/dev/null
  app_stop
}
trap cleanup EXIT
app_start
gcjobs() { bin/rails runner "$1.times { GcJob.perform_later($2) }" > /dev/null 2>&1; sleep 3; }
enqueue 3000; waitdone 3000
until grep -q "worker 3 (gen 2).*ready" "$APP/herd.log"; do sleep 0.5; done
sleep 3
kids() { cat /proc/$HPID/task/*/children; }
MOLD=$(for p in $(kids); do grep -q "mold (gen 2)" /proc/$p/cmdline 2>/dev/null && echo $p; done | head -1)
W=$(for p in $(kids); do grep -q "worker 1 (gen 2)" /proc/$p/cmdline 2>/dev/null && echo $p; done | head -1)
echo "mold $MOLD worker $W ($MODE)" | tee "$OUT/pids"
ruby "$HERE/pages.rb" pages "$W" "$MOLD" > "$OUT/pages0.tsv"
perf record -q -e page-faults -c 1 -d --call-graph dwarf,4096 -m 16M -p "$W" -o "$OUT/faults.data" 2> "$OUT/perf.err" &
PERF=$!
sleep 2
enqueue 1500; waitdone 4500; sleep 2
gcjobs 12 false   # each worker logs its GC counts: did it run a major GC of its own?
ruby "$HERE/pages.rb" pages "$W" "$MOLD" > "$OUT/pages1.tsv"
gcjobs 40 true    # then a major GC in every worker
kill -INT "$PERF"; wait "$PERF" || true; PERF=
ruby "$HERE/pages.rb" pages "$W" "$MOLD" > "$OUT/pages.tsv"
cp "$APP/tmp/gc_jobs.log" "$OUT/"
echo "worker $W ran $(awk -v w="$W" '$2 == w' "$APP/tmp/bench_jobs.log" | wc -l) jobs"
for f in pages0 pages1 pages; do
  echo "$f malloc_main own MiB: $(awk '$2 == "malloc_main" { c[$3]++ } END { for (k in c) printf "%s %.1f  ", k, c[k] * 4 / 1024 }' "$OUT/$f.tsv")"
done
perf script -i "$OUT/faults.data" -F tid,addr,ip,sym > "$OUT/faults.txt" 2>/dev/null
ruby "$HERE/pages.rb" faults "$OUT/pages.tsv" "$OUT/faults.txt" --kind malloc_main --depth 5 | head -12
