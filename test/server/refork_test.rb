# frozen_string_literal: true

require "test_helper"
require "herd/server"
require "support/server_harness"

class ServerReforkTest < Herd::Test
  include Herd::ServerTest

  def self.test_timeout
    120
  end

  def refork_to(generation, workers: 1)
    @server.signal("USR2")
    @server.wait_for(/mold \(gen #{generation}\), pid \d+ ready/)
    workers.times { |number| @server.wait_for(/worker #{number} \(gen #{generation}\), pid \d+ ready/) }
  end

  def titles
    tree = Herd::Memory::ProcessTree.new
    # Not zombies: the middle process of a mold's double fork may not be
    # reaped yet when the worker it forked reports ready.
    @server.descendants.select { |pid| Herd::Procfs.alive?(pid) }
      .map { |pid| [tree.ppid(pid), tree.title(pid).sub(/ requests=\d+/, "")] }
  end

  def test_usr2_reforks_generation_after_generation_and_every_process_stays_a_child_of_the_monitor
    serve(args: ["-w", "2"])
    2.times { @server.get("/") }
    (1..3).each do |generation|
      refork_to(generation, workers: 2)
      promoted = Integer(@server.lines.grep(/promoting worker \d \(gen #{generation - 1}\)/).last[/promoting worker (\d)/, 1])
      @server.wait_for(/mold \(gen #{generation - 1}\), pid \d+ exited with status 0/)
      # The promoted worker became the mold; each other one is replaced
      # (with the default surge, once its replacement is ready).
      ([0, 1] - [promoted]).each do |number|
        @server.wait_for(/worker #{number} \(gen #{generation - 1}\), pid \d+ exited with status 0/)
      end
    end
    @server.wait_for(/refork \(USR2\): promoting worker \d \(gen 2\)/)
    assert_equal [[@server.pid, "herd mold (gen 3)"], [@server.pid, "herd worker 0 (gen 3)"], [@server.pid, "herd worker 1 (gen 3)"]],
      titles.sort
    assert_match(/200/, @server.get("/").lines.first)
  end

  # The mold that booted the app compacts; the promoted ones descend from
  # it and compact only once the live objects grew (`compact: :auto`). The
  # GCs run at nice 10 by default (Config#heap_nice), compaction included;
  # a Hash of options without `nice:` keeps that.
  def test_the_booted_mold_compacts_the_promoted_ones_when_the_heap_grew
    skip "no GC.compact in this Ruby" unless GC.respond_to?(:compact)
    serve(args: ["-w", "1"], config: "prepare_heap compact: :auto")
    booted = @server.wait_for(/mold \(gen 0\): heap prepared.*/)[0]
    assert_match(/\+ compaction/, booted)
    assert_match(/; GCs at nice 10, /, booted) unless Herd::LowPriority.unsupported_reason
    [1, 2].each do |generation|
      @server.get("/")
      refork_to(generation)
      assert_match(/, compaction not needed \(\+\d+\.\d% live objects since the last/,
        @server.wait_for(/mold \(gen #{generation}\): heap prepared.*/)[0])
    end
  end

  # A worker whose first request builds a cache larger than a tenth of the
  # heap: the mold promoted from it compacts again, the next one not.
  def test_a_promoted_mold_compacts_when_the_heap_grew_since_the_last_compaction
    skip "no GC.compact in this Ruby" unless GC.respond_to?(:compact)
    app = <<~RUBY
      CACHE = []
      run ->(env) { CACHE.concat(Array.new(GC.stat(:heap_live_slots) / 4) { |i| "entry \#{i}" }) if CACHE.empty?; [200, {}, ["ok\n"]] }
    RUBY
    serve(app: app, args: ["-w", "1"])
    assert_match(/\+ compaction/, @server.wait_for(/mold \(gen 0\): heap prepared.*/)[0])
    @server.get("/")
    refork_to(1)
    assert_match(/\+ compaction/, @server.wait_for(/mold \(gen 1\): heap prepared.*/)[0])
    @server.get("/")
    refork_to(2)
    assert_match(/, compaction not needed/, @server.wait_for(/mold \(gen 2\): heap prepared.*/)[0])
  end

  # `prepare_heap compact: true`: every promoted mold compacts.
  def test_compact_true_compacts_every_promoted_mold
    skip "no GC.compact in this Ruby" unless GC.respond_to?(:compact)
    serve(args: ["-w", "1"], config: "prepare_heap compact: true")
    @server.wait_for(/mold \(gen 0\): heap prepared/)
    [1, 2].each do |generation|
      @server.get("/")
      refork_to(generation)
      assert_match(/\+ compaction/, @server.wait_for(/mold \(gen #{generation}\): heap prepared.*/)[0])
    end
  end

  # Herd.close_all_ios! in the hooks, as docs/FORK_SAFETY.md suggests,
  # closes the app's inherited descriptors, never the server's own (links,
  # listeners, the log), in the first mold, a promoted one and workers.
  def test_close_all_ios_in_the_hooks_spares_the_servers_own_descriptors
    app = <<~RUBY
      APP_FILE = File.open(__FILE__)
      run ->(env) { [200, {}, ["app file closed: \#{APP_FILE.closed?}\n"]] }
    RUBY
    config = <<~RUBY
      workers 1
      after_mold_fork { |*| Herd.close_all_ios! }
      after_fork { |*| Herd.close_all_ios! }
    RUBY
    serve(app: app, config: config)
    assert_match(/app file closed: true/, @server.get("/"))
    refork_to(1)
    assert_match(/app file closed: true/, @server.get("/"))
    refork_to(2)
    assert_match(/app file closed: true/, @server.get("/"))
    refute(@server.lines.any? { |line| line.match?(/crashed|failed|closed stream/) }, @server.lines.join)
  end

  def test_herd_refork_asks_a_running_monitor
    serve(args: ["-w", "1"])
    out, err, status = herd_cli("refork", @server.pid.to_s)
    assert status.success?, err
    assert_match(/asked herd monitor #{@server.pid} to refork/, out)
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    _, err, status = herd_cli("refork", Process.pid.to_s)
    assert_equal 1, status.exitstatus
    assert_match(/is ".*", not a herd monitor/, err)
  end

  def test_refork_after_counts_requests_per_generation
    serve(config: "workers 1\nrefork_after [3, 5]\n")
    # The first mold leaves malloc's free chunks to its workers' warm-up;
    # the molds after it seal them.
    @server.wait_for(/mold \(gen 0\): heap prepared .*; malloc's free pages given back, its free chunks left free/)
    3.times { @server.get("/") }
    @server.wait_for(/refork \(3 requests\): promoting worker 0 \(gen 0\)/)
    @server.wait_for(/mold \(gen 1\): heap prepared .*; \d+ malloc free chunks sealed/)
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    # The old worker serves until its replacement is ready (refork_max_surge), then leaves.
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ exited with status 0/)
    5.times { @server.get("/") }
    @server.wait_for(/refork \(5 requests\): promoting worker 0 \(gen 1\)/)
    @server.wait_for(/worker 0 \(gen 2\), pid \d+ ready/)
  end

  def test_a_fork_unsafe_worker_is_never_promoted
    serve(app: Herd::ServerHarness::FORK_UNSAFE_APP, args: ["-w", "1"])
    @server.make_worker_unsafe
    @server.signal("USR2")
    @server.wait_for(/refork \(USR2\): no fork-safe worker to promote; generation 0 keeps serving/)
    refute(@server.lines.any? { |line| line.include?("promoting") })
  end

  def test_a_new_mold_that_crashes_while_booting_is_retried_and_the_old_generation_keeps_serving
    config = <<~RUBY
      workers 1
      after_mold_fork do |server, mold|
        if mold.generation == 1
          File.write("crashed", "")
          exit!(3)
        end
      end
    RUBY
    serve(config: config)
    @server.signal("USR2")
    @server.wait_for(/refork to generation 1 failed \(exited with status 3\); generation 0 keeps serving; next attempt in/)
    assert_match(/200/, @server.get("/").lines.first)
    @server.signal("USR2")
    @server.wait_for(/mold \(gen 2\), pid \d+ ready/)
    @server.wait_for(/worker 0 \(gen 2\), pid \d+ ready/)
  end

  def test_the_rollout_replaces_at_most_refork_max_unavailable_workers_at_a_time
    serve(config: "workers 3\nrefork_max_unavailable 1\n")
    mark = @server.mark
    refork_to(1, workers: 3)
    3.times { |number| @server.wait_for(/worker #{number} \(gen 0\), pid \d+ exited/) }
    events, fewest = fewest_serving(mark, 3)
    assert_equal 2, fewest, "more than one worker out of service at once:\n#{events.join}"
  end

  # Replays the log's worker lines from `mark`, when `serving` workers of
  # generation 0 were ready: how many numbers have a ready worker after
  # each line. Returns the lines and the fewest numbers served.
  def fewest_serving(mark, serving)
    events = @server.lines.drop(mark).grep(/worker \d \(gen \d\), pid \d+ (exited|ready)/)
    ready = Array.new(serving) { |number| [number.to_s, "0"] }.to_h { |key| [key, true] }
    fewest = events.map do |line|
      number, generation = line.match(/worker (\d) \(gen (\d)\)/).captures
      line.include?("exited") ? ready.delete([number, generation]) : ready[[number, generation]] = true
      ready.keys.map(&:first).uniq.size
    end.min
    [events, fewest]
  end

  # The worker that forked the new mold shares its pages with it from then
  # on (each page it writes is a copy-on-write fault): the rollout replaces
  # it first. Worker 0, the first otherwise, cannot be the one promoted.
  # Its replacement is the first of the new generation to be ready; the old
  # workers' exits may come in any order (with the default surge, an old
  # worker told to stop finishes its request while the next replacement is
  # already forked).
  def test_the_rollout_replaces_the_promoted_worker_first
    serve(config: <<~RUBY)
      workers 3
      after_fork { |_server, worker| Herd.no_longer_fork_safe!("test") if worker.number == 0 && worker.generation == 0 }
    RUBY
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ is no longer fork safe/)
    @server.signal("USR2")
    promoted = @server.wait_for(/refork \(USR2\): promoting worker (\d) \(gen 0\)/)[1]
    first = @server.wait_for(/worker (\d) \(gen 1\), pid \d+ ready/)[1]
    assert_equal promoted, first, @server.lines.join
  end

  # refork_max_surge 1 with refork_max_unavailable 0: each replacement is
  # forked and ready before the worker it replaces stops, so every number
  # is served throughout (the gen-0 workers were ready before the mark).
  # Nothing waits on a replacement's warm-up: it runs at prepare_heap's
  # nice value, where a gen-0 worker's (no worker to replace) does not.
  def test_a_surge_rollout_keeps_every_worker_number_serving
    serve(config: "workers 2\nrefork_max_surge 1\nrefork_max_unavailable 0\nwarmup '/'\nprepare_heap nice: 10\n")
    mark = @server.mark
    refork_to(1, workers: 2)
    @server.wait_for(/mold \(gen 1\) ready; replacing older workers 1 at a time, each forked before the worker it replaces stops/)
    2.times { |number| @server.wait_for(/worker #{number} \(gen 0\), pid \d+ exited with status 0/) }
    events, fewest = fewest_serving(mark, 2)
    events.map! { |line| line.sub(/\A\S+ herd\[\d+\] monitor: /, "").sub(/pid \d+ /, "") }
    assert_equal 2, fewest, "a worker number went unserved:\n#{events.join}"
    [0, 1].each do |number|
      assert_operator events.index("worker #{number} (gen 1), ready\n"), :<,
        events.index("worker #{number} (gen 0), exited with status 0\n"), events.join
    end
    assert_match(/200/, @server.get("/").lines.first)
    warm_ups = @server.lines.grep(/worker \d \(gen \d\): warm-up: GET \/ 200/)
    assert_equal 4, warm_ups.size, warm_ups.join
    niced = Herd::LowPriority.unsupported_reason ? /at the caller's priority/ : /at nice 10$/
    assert_equal 2, warm_ups.grep(/\(gen 1\).*#{niced}/).size, warm_ups.join
    assert_equal 0, warm_ups.grep(/\(gen 0\).*priority|\(gen 0\).*nice/).size, warm_ups.join
  end

  # A replacement that dies before it is ready leaves the worker it was to
  # replace serving; the surge is tried again after the recovery's pause,
  # and completes once the new generation can start.
  def test_a_surge_replacement_that_dies_leaves_the_old_worker_serving
    serve(args: ["-w", "1"], config: <<~RUBY)
      refork_max_surge 1
      refork_max_unavailable 0
      after_fork { |_server, worker| exit!(3) if worker.generation >= 1 && !File.exist?("start") }
    RUBY
    @server.signal("USR2")
    @server.wait_for(/mold \(gen 1\), pid \d+ ready/)
    died = /worker 0 \(gen 1\), pid \d+ exited with status 3/
    @server.wait_for(died)
    @server.wait_for(died, after: @server.lines.index { |line| line.match?(died) } + 1)
    assert_match(/200/, @server.get("/").lines.first)
    refute @server.lines.grep(/worker 0 \(gen 0\), pid \d+ exited/).any?, @server.lines.join
    File.write(File.join(@server.dir, "start"), "")
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ exited with status 0/)
    assert_match(/200/, @server.get("/").lines.first)
  end

  UNSAFE_AFTER_GO = <<~RUBY
    run ->(env) {
      if env["PATH_INFO"] == "/unsafe"
        File.write("unsafe-started", "")
        sleep 0.01 until File.exist?("go")
        Herd.no_longer_fork_safe!("opened a gRPC channel")
      end
      [200, {}, ["ok"]]
    }
  RUBY

  # USR2 while worker 0 serves a request that will make it fork-unsafe:
  # the monitor picks it (it is still fork safe), and the order reaches it
  # only once that request is done. Returns the request's thread.
  def promote_a_worker_about_to_become_unsafe
    client = Thread.new { @server.get("/unsafe") }
    marker = File.join(@server.dir, "unsafe-started")
    sleep 0.01 until File.exist?(marker) || !client.alive?
    @server.signal("USR2")
    @server.wait_for(/refork \(USR2\): promoting worker 0 \(gen 0\)/)
    client
  end

  # A worker chosen for promotion that stops being fork safe before it reads
  # the order (here: in the request it is serving) refuses it; the monitor
  # never asks it again and promotes another worker.
  def test_a_worker_that_refuses_promotion_is_passed_over
    serve(app: UNSAFE_AFTER_GO, args: ["-w", "1"])
    client = promote_a_worker_about_to_become_unsafe
    File.write(File.join(@server.dir, "go"), "")
    assert_match(/200/, client.value.lines.first)
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ refused promotion \(not fork safe: opened a gRPC channel\); trying another worker/)
    @server.wait_for(/refork \(retry\): no fork-safe worker to promote; generation 0 keeps serving/)
    @server.signal("TTIN")
    @server.wait_for(/worker 1 \(gen 0\), pid \d+ ready/)
    @server.signal("USR2")
    @server.wait_for(/refork \(USR2\): promoting worker 1 \(gen 0\)/)
    @server.wait_for(/mold \(gen 2\), pid \d+ ready/) # the refused promotion used generation 1
  end

  # The same refusal while the server stops: the monitor already sent the
  # new mold's link a stop the worker never reads; the refusal still gets
  # through, and nothing is taken for a mold that died.
  def test_a_refusal_during_a_graceful_stop_is_heard
    serve(app: UNSAFE_AFTER_GO, args: ["-w", "1"])
    client = promote_a_worker_about_to_become_unsafe
    @server.signal("TERM")
    @server.wait_for(/TERM: graceful stop/)
    File.write(File.join(@server.dir, "go"), "")
    assert_match(/200/, client.value.lines.first)
    assert_equal 0, @server.wait.exitstatus
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ refused promotion \(not fork safe: opened a gRPC channel\)$/)
    refute(@server.lines.any? { |line| line.include?("died while starting") }, @server.lines.join)
  end

  %w[QUIT TERM].each do |signal|
    define_method("test_#{signal}_during_a_refork_stops_every_process") do
      serve(args: ["-w", "2"])
      @server.signal("USR2")
      @server.wait_for(/refork \(USR2\): promoting worker/)
      @server.signal(signal)
      assert_equal 0, @server.wait.exitstatus
      @server.wait_for(/#{signal}: graceful stop/)
      @server.wait_for(/monitor: stopped/)
      assert_empty @server.processes_left, "processes left in herd's process group"
    end
  end

  def test_ttin_during_a_refork_ends_with_one_more_worker_of_the_new_generation
    serve(args: ["-w", "1"])
    @server.signal("USR2")
    @server.signal("TTIN")
    @server.wait_for(/mold \(gen 1\), pid \d+ ready/)
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    @server.wait_for(/worker 1 \(gen 1\), pid \d+ ready/)
  end

  def test_ttou_during_a_refork_ends_with_one_worker_fewer_all_of_the_new_generation
    serve(args: ["-w", "2"])
    @server.signal("USR2")
    @server.wait_for(/refork \(USR2\): promoting worker/)
    @server.signal("TTOU")
    @server.wait_for(/workers: 2 -> 1/)
    @server.wait_for(/mold \(gen 1\), pid \d+ ready/)
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ exited with status 0/)
    @server.wait_for(/worker 1 \(gen \d\), pid \d+ exited with status 0/)
    @server.wait_for(/mold \(gen 0\), pid \d+ exited with status 0/)
    assert_equal [[@server.pid, "herd mold (gen 1)"], [@server.pid, "herd worker 0 (gen 1)"]], titles.sort
    assert_match(/200/, @server.get("/").lines.first)
  end
end
