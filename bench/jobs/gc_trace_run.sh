#!/bin/bash
# When each `herd sidekiq` worker runs a major GC, and what its own memory does then
# (docs/COPY_ON_WRITE.md, "A major GC due in every child"). Needs redis-server, Ruby 3.4.5 in
# $RUBY_BIN, and a copy of bench/jobs' Rails app ($TEMPLATE, as for arenas_run.sh).
#
#   bench/jobs/gc_trace_run.sh [JOBS] [HERD_SETTINGS]
#
# Runs `herd sidekiq -w 4` (refork_after [50, 100, 1000], plus HERD_SETTINGS, e.g.
# "prepare_heap major_gc_when_due: false") on a fresh copy of the app. Each worker, once ready, writes
# its GC counts, the reason of the last major GC and its Private_Dirty every 50 ms (for its first
# 2 s, then at each new GC) to tmp/gc_trace.log. After JOBS (6000) mixed jobs, prints what each mold's
# heap preparation did and, per worker, its GCs and Private_Dirty at its start and end and at each of
# its major GCs. Stops its herd and redis-server on exit.
set -e
JOBS=${1:-6000}; SETTINGS=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
TEMPLATE=${TEMPLATE:-/tmp/jobs-app-template}; APP=${APP:-/tmp/jobs-gc-trace-app}
RUBY_BIN=${RUBY_BIN:-/root/.herd/rubies/3.4.5/bin}
RPID=; HPID=
source "$HERE/app_run.sh"
app_prepare
cat > "$APP/config/herd_refork.rb" <<RUBY
# frozen_string_literal: true
# bench/jobs/gc_trace_run.sh: herd_refork.rb's schedule, and a GC trace in every worker
refork_after [50, 100, 1000]
$SETTINGS
after_worker_ready do |*|
  Thread.new do
    log = File.open("tmp/gc_trace.log", "a").tap { |file| file.sync = true }
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    last = nil
    loop do
      stat = GC.stat
      now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      counts = [stat[:major_gc_count], stat[:minor_gc_count]]
      if counts != last || now - started < 2
        dirty = File.read("/proc/self/smaps_rollup")[/Private_Dirty:\\s+(\\d+)/, 1].to_i / 1024.0
        log.write(format("%.2f %d %s major=%d minor=%d by=%p dirty=%.1f\\n", now, Process.pid,
          File.read("/proc/self/cmdline")[/worker \\d+ \\(gen \\d+\\)/].to_s.tr(" ", "_"), *counts, GC.latest_gc_info(:major_by), dirty))
      end
      last = counts
      sleep 0.05
    end
  end
end
RUBY
unset RUBY_YJIT_ENABLE
trap app_stop EXIT
app_start
enqueue "$JOBS" > /dev/null; waitdone "$JOBS"
sleep 3
grep -o "mold (gen [0-9]*): heap prepared.*" "$APP/herd.log" | sed -e 's/, young .*//'
ruby -e '
  rows = File.readlines(ARGV[0]).map { |line| time, pid, title, rest = line.split(" ", 4); [time.to_f, pid, title, rest] }
  zero = rows.map(&:first).min
  rows.group_by { |row| row[1] }.each_value do |lines|
    lines.sort_by!(&:first)
    majors = lines.each_cons(2).select { |a, b| a[3][/major=\d+/] != b[3][/major=\d+/] }
      .map { |a, b| format("%.2f s %s -> %s", b[0] - zero, a[3][/dirty=\S+/], b[3][/dirty=\S+/]) }
    puts format("%-20s pid %s from %.2f s: %s | at %.2f s: %s | major GCs: %s", lines[0][2], lines[0][1], lines[0][0] - zero,
      lines[0][3].strip, lines[-1][0] - zero, lines[-1][3].strip, majors.empty? ? "none" : majors.join(", "))
  end' "$APP/tmp/gc_trace.log"
