#!/bin/bash
# What `herd sidekiq`'s workers hold of their own, by kind, with glibc's own malloc arenas or a cap on
# them (docs/COPY_ON_WRITE.md, "Threads and malloc's arenas"). Needs redis-server, Ruby 3.4.5 in
# $RUBY_BIN, root (or ptrace rights) to read the processes' memory, and a copy of bench/jobs' Rails app
# ($TEMPLATE: `ruby bench/jobs.rb --smoke --only herd-sidekiq --keep` leaves one under the printed
# directory, as template/).
#
#   bench/jobs/arenas_run.sh [ARENA_MAX] [JOBS]
#
# Runs `herd sidekiq -w 4` (refork_after [50, 100, 1000]) on a fresh copy of the app, with
# MALLOC_ARENA_MAX=ARENA_MAX if given (glibc's own arenas, 8 per core, with `default` or nothing),
# enqueues JOBS (8000) mixed jobs, and once they ran prints Σ PSS of the tree and each process's own
# memory (USS) by kind (bench/yjit_memory/maps.rb: malloc_arena is the threads' arenas), with the part
# whose bytes equal the mold's in parentheses. Stops its herd and redis-server on exit.
set -e
ARENA_MAX=${1:-default}; JOBS=${2:-8000}
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
TEMPLATE=${TEMPLATE:-/tmp/jobs-app-template}; APP=${APP:-/tmp/jobs-arenas-app}
RUBY_BIN=${RUBY_BIN:-/root/.herd/rubies/3.4.5/bin}
RPID=; HPID=
source "$HERE/app_run.sh"
app_prepare
unset RUBY_YJIT_ENABLE MALLOC_ARENA_MAX
[ "$ARENA_MAX" = default ] || export MALLOC_ARENA_MAX=$ARENA_MAX
trap app_stop EXIT
app_start
enqueue "$JOBS" > /dev/null; waitdone "$JOBS"
sleep 2
unset MALLOC_ARENA_MAX
ruby -I"$ROOT/lib" -r"$ROOT/bench/yjit_memory/maps" -rherd/memory -e '
  report = Herd::Memory.tree(Integer(ARGV[0]))
  mold = report.rows.find { |row| row.title.to_s.include?("mold") }&.pid
  puts format("MALLOC_ARENA_MAX=%s: Σ PSS %.1f MiB", ARGV[1], report.total.pss / 1048576.0)
  report.rows.drop(1).each do |row|
    kinds = YjitMemoryMaps.classify(row.pid, heap_page_size: 65536, ref_pid: (row.pid == mold) ? nil : mold)
    own = kinds.select { |_kind, slot| slot.is_a?(Hash) && slot[:uss] >= 52428 }
      .map { |kind, slot| format("%s %.1f (%.1f)", kind, slot[:uss] / 1048576.0, slot[:same] / 1048576.0) }
    puts format("%-34s USS %5.1f MiB: %s", row.title.to_s[/\A(herd )?(\S+ \d* ?\(gen \d+\))/, 2] || row.title,
      kinds.values.grep(Hash).sum { |slot| slot[:uss] } / 1048576.0, own.join(", "))
  end' "$HPID" "$ARENA_MAX"
