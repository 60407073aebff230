# frozen_string_literal: true

# herd config for bench/yjit_memory.rb: herd's defaults but for what the variant's environment asks, and
# probes (bench/yjit_memory/probe.rb) at each step of a mold's and a worker's life.
#   YJIT_MEM_OOBGC=false|N        out_of_band_gc
#   YJIT_MEM_PREPARE=false        prepare_heap false
#   YJIT_MEM_ENABLE=after_fork    RubyVM::YJIT.enable in each worker's after_fork (the server starts without YJIT)
#   YJIT_MEM_PROBE_AT=1,2,5,...   requests after which a worker records a probe
#   YJIT_MEM_PIDFILE=path         the monitor's pidfile
#   YJIT_MEM_TIMEOUT=N            timeout (the request that reaches YJIT's call threshold on bench/cow's
#                                 constant app compiles 100,000 methods: longer than the default 30 s on 2 busy cores)
require_relative "probe"

oob = ENV["YJIT_MEM_OOBGC"]
out_of_band_gc((oob == "false") ? false : Integer(oob)) if oob && !oob.empty?
prepare_heap false if ENV["YJIT_MEM_PREPARE"] == "false"
pidfile ENV["YJIT_MEM_PIDFILE"] if ENV["YJIT_MEM_PIDFILE"]
timeout Integer(ENV["YJIT_MEM_TIMEOUT"]) if ENV["YJIT_MEM_TIMEOUT"]

probe_at = ENV.fetch("YJIT_MEM_PROBE_AT", "1,2,3,5,10,15,20,30,40,50,75,100").split(",").map { |n| Integer(n) }
enable_after_fork = ENV["YJIT_MEM_ENABLE"] == "after_fork"
probed_mold = nil # the pid of the mold that recorded its probe (a promoted mold inherits a worker's value)

after_mold_fork do |_server, mold|
  YjitMemoryProbe.record("mold_booted", mold)
end

before_fork do |_server, worker|
  # The first fork of this mold: its heap is prepared.
  unless probed_mold == Process.pid
    probed_mold = Process.pid
    YjitMemoryProbe.record("mold_prepared", worker)
  end
end

after_fork do |_server, worker|
  YjitMemoryProbe.record("after_fork", worker)
  if enable_after_fork && defined?(RubyVM::YJIT) && !RubyVM::YJIT.enabled?
    RubyVM::YJIT.enable
    YjitMemoryProbe.record("yjit_enabled", worker)
  end
end

after_worker_ready do |_server, worker|
  YjitMemoryProbe.record("ready", worker)
end

after_request_complete do |_server, worker, _exchange|
  YjitMemoryProbe.record("request_#{worker.requests}", worker) if probe_at.include?(worker.requests)
end

before_promotion do |_server, worker|
  YjitMemoryProbe.record("before_promotion", worker)
end
