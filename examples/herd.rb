# An example herd configuration: herd serve config.ru -c examples/herd.rb
# (as config/herd.rb it is read without -c). Every option and hook: docs/CONFIGURATION.md.
# Flags win over PORT / WEB_CONCURRENCY, which win over this file.

workers 4
listen "unix:/run/herd/herd.sock", umask: 0o007, backlog: 1024
# listen 8080               # every interface (0.0.0.0), as Unicorn and Puma; "127.0.0.1:8080": this machine only

timeout 30          # a request longer than this: the worker is SIGKILLed and replaced
spawn_timeout 30    # a mold or worker not ready within this: killed and retried
shutdown_timeout 30 # QUIT/TERM wait this long for requests in flight

prepare_heap true   # or prepare_heap compact: true
out_of_band_gc 100_000 # a worker's minor GC between requests after this many allocations; false: Ruby decides
http max_body: 50 * 1024 * 1024, read_timeout: 30

pidfile "tmp/pids/herd.pid"         # kill -USR1 $(cat tmp/pids/herd.pid), never pkill
# stdout_path "log/herd.out.log"    # without them, logs go to the journal / the container's stdout
# stderr_path "log/herd.err.log"    # herd's own log; USR1 reopens both (logrotate)

before_fork do |server, worker|
  # in the mold, before it forks `worker`
end

after_fork do |server, worker|
  # in the new worker: reconnect what does not reconnect by itself after a fork, start threads
  # (ActiveRecord 7.1+ needs nothing here: docs/FORK_SAFETY.md)
end

before_promotion do |server, worker|
  # in the worker about to fork the next mold: close what the new mold must not inherit
  # (herd disconnects ActiveRecord itself), e.g. DB.disconnect (Sequel), REDIS.close
end

after_worker_exit do |server, worker, status|
  server.log.info("monitor", "#{worker} left with #{status.inspect}")
end
