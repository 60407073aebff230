# Sourced by bench/jobs/pages_run.sh and ksm_run.sh: a fresh copy of bench/jobs' Rails app, its
# redis-server and `herd sidekiq -w 4` with refork_after [50, 100, 1000], and the helpers both use.
# The caller sets HERE, ROOT, TEMPLATE, APP and RUBY_BIN, and calls app_stop on exit.

# A fresh copy of the app, and the environment its commands run with.
app_prepare() {
  rm -rf "$APP"; cp -a "$TEMPLATE" "$APP"; rm -f "$APP/tmp/bench_jobs.log" "$APP/tmp/gc_jobs.log"
  export PATH=$RUBY_BIN:$PATH BUNDLE_GEMFILE=$ROOT/test/apps/rails8/Gemfile RAILS_ENV=production \
    RACK_ENV=production RAILS_MAX_THREADS=25 BENCH_JOBS_ADAPTER=sidekiq REDIS_URL=unix://$APP/redis.sock
}

# redis-server, then herd, in $APP; returns once herd's 4 workers are ready (RPID, HPID set).
app_start() {
  redis-server --port 0 --unixsocket "$APP/redis.sock" --save "" --appendonly no --dir "$APP" > "$APP/redis.log" 2>&1 < /dev/null &
  RPID=$!
  sleep 1; cd "$APP"
  bundle exec herd sidekiq -c config/herd_refork.rb -w 4 -- -c 5 > "$APP/herd.log" 2>&1 < /dev/null &
  HPID=$!
  until grep -q "ready: 4 workers" "$APP/herd.log"; do sleep 0.5; done
}

app_stop() {
  [ -n "$HPID" ] && kill -TERM "$HPID" 2>/dev/null && wait "$HPID" 2>/dev/null
  [ -n "$RPID" ] && kill "$RPID" 2>/dev/null; wait "$RPID" 2>/dev/null; true
}

enqueue() { echo "mixed $1" | bin/rails runner script/bench_enqueue.rb 2>/dev/null | grep enqueued; }
waitdone() { until [ "$(wc -l < "$APP/tmp/bench_jobs.log" 2>/dev/null || echo 0)" -ge "$1" ]; do sleep 0.5; done; }
