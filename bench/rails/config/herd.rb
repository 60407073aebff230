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
instance_eval(ENV["HERD_BENCH_OPTIONS"]) if ENV["HERD_BENCH_OPTIONS"]
