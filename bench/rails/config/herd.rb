# frozen_string_literal: true

# herd for bench/rails.rb and bench/reload.rb: 4 workers, reforking on
# Pitchfork's benchmark schedule, as docs/RAILS.md configures a Rails app.
# The driver passes `-l 127.0.0.1:PORT`; HERD_BENCH_OPTIONS (Ruby, evaluated
# here) adds the settings of a variant, e.g. "out_of_band_gc false".
workers Integer(ENV.fetch("BENCH_WORKERS", 4))
refork_after [50, 100, 1000]
timeout 60
# A reload (HUP) boots Rails in a fresh mold while 4 workers and the load
# use both cores: measured 19-29 s on this 2-core machine (4 s idle), near
# the default spawn_timeout of 30 s, past which the new mold is killed.
spawn_timeout 120
# As docs/RAILS.md advises: the pages without side effects, once each, in a
# freshly booted mold (the herd-no_warmup variant leaves it out).
warmup "/things", "/things/new", "/things.json" unless ENV["BENCH_NO_WARMUP"]
# Rails 8.1 loads these on a worker's first request with a session cookie
# and its first INSERT of a string: the mold loads them for every worker,
# as docs/RAILS.md advises for Rails 8 (the Rails 7.2 app has no msgpack).
after_mold_fork do |_server, _mold|
  if defined?(Rails::VERSION) && Rails::VERSION::MAJOR >= 8
    require "active_support/message_pack"
    require "active_support/multibyte/chars"
  end
end
instance_eval(ENV["HERD_BENCH_OPTIONS"]) if ENV["HERD_BENCH_OPTIONS"]
