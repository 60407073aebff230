#!/bin/bash
# What `ksm` takes back of job workers that have each run a major GC (docs/COPY_ON_WRITE.md,
# "Merging identical pages: `ksm`"). Needs Linux >= 6.4 with ksmd running (as root: echo 1 >
# /sys/kernel/mm/ksm/run), redis-server, Ruby 3.4.5 in $RUBY_BIN, and a copy of bench/jobs' Rails app
# ($TEMPLATE: `ruby bench/jobs.rb --smoke --only herd-sidekiq --keep` leaves one under the printed
# directory, as template/).
#
#   bench/jobs/ksm_run.sh [ksm|noksm] [IDLE_S]
#
# Runs `herd sidekiq -w 4` (refork_after [50, 100, 1000]; HERD_KSM=1 or 0) on a fresh copy of the app,
# 3,000 mixed jobs, waits for the gen-2 workers, then enqueues GcJobs that run `GC.start` in every
# worker, and prints Σ PSS of the tree, the kernel's net profit of merging (merged pages less its
# records of every scanned page, which PSS leaves out), and each process's PSS and merged pages (/proc/PID/ksm_stat)
# before the GCs, 5 s after them and IDLE_S (60) s after them. Stops its herd and redis-server on exit.
set -e
MODE=${1:-ksm}; IDLE=${2:-60}
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
TEMPLATE=${TEMPLATE:-/tmp/jobs-app-template}; APP=${APP:-/tmp/jobs-ksm-app}
RUBY_BIN=${RUBY_BIN:-/root/.herd/rubies/3.4.5/bin}
RPID=; HPID=
source "$HERE/app_run.sh"
app_prepare
cat > "$APP/app/jobs/gc_job.rb" <<'RUBY'
# frozen_string_literal: true
# bench/jobs/ksm_run.sh: a major GC in whichever worker runs it
class GcJob < ApplicationJob
  def perform = GC.start(full_mark: true, immediate_sweep: true)
end
RUBY
unset RUBY_YJIT_ENABLE
[ "$MODE" = ksm ] && export HERD_KSM=1 || export HERD_KSM=0
trap app_stop EXIT
app_start
enqueue 3000 > /dev/null; waitdone 3000
until grep -q "worker 3 (gen 2).*ready" "$APP/herd.log"; do sleep 0.5; done
sleep 3
tree() {
  ruby -I"$ROOT/lib" -rherd/memory -e '
    report = Herd::Memory.tree(Integer(ARGV[0]))
    stat = ->(pid, name) { File.read("/proc/#{pid}/ksm_stat")[/#{name}:? (-?\d+)/, 1].to_i rescue 0 }
    rows = report.rows.map do |row|
      format("%s %.1f/%.1f", row.title.to_s.split(" (").first.sub("herd ", ""), row.sample.pss / 1048576.0,
        stat.call(row.pid, "ksm_merging_pages") * 4 / 1024.0)
    end
    profit = report.rows.sum { |row| stat.call(row.pid, "ksm_process_profit") } / 1048576.0
    puts format("%-22s Σ PSS %.1f MiB; KSM net profit of the tree %.1f MiB (merged pages less the kernel records of every scanned page); " \
      "per process PSS/merged MiB: %s", ARGV[1], report.total.pss / 1048576.0, profit, rows.join(", "))' "$HPID" "$1"
}
grep -m1 "monitor: .*ksm" "$APP/herd.log" | cut -c26- || true
tree "before the major GCs"
bin/rails runner "40.times { GcJob.perform_later }" > /dev/null 2>&1
sleep 5; tree "5 s after them"
sleep "$((IDLE - 5))"; tree "$IDLE s after them"
