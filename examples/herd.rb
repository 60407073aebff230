# An example herd configuration: herd serve config.ru -c examples/herd.rb
# Every option and hook: docs/CONFIGURATION.md.

workers 4
listen "unix:/run/herd/herd.sock", umask: 0o007, backlog: 1024
# listen "127.0.0.1:8080"

timeout 30          # a request longer than this: the worker is SIGKILLed and replaced
spawn_timeout 30    # a mold or worker not ready within this: killed and retried
shutdown_timeout 30 # QUIT/TERM wait this long for requests in flight

prepare_heap true   # or prepare_heap compact: true
out_of_band_gc 100_000 # a worker's minor GC between requests after this many allocations; false: Ruby decides
http max_body: 50 * 1024 * 1024, read_timeout: 30

before_fork do |server, worker|
  # in the mold, before it forks `worker`
end

after_worker_fork do |server, worker|
  # in the new worker: reconnect databases, restart threads
  # ActiveRecord::Base.establish_connection
end

after_worker_exit do |server, worker, status|
  server.log.info("monitor", "#{worker} left with #{status.inspect}")
end
