# frozen_string_literal: true

require "test_helper"
require "herd/server"
require "support/server_harness"

# `rake test:slow`: how workers roll onto a new mold: the budgets, surge
# replacements, refusals, a refork or TTIN/TTOU asked for mid-roll, a
# replacement that never gets ready.
class ServerRolloutSlowTest < Herd::Test
  include Herd::ServerTest

  def self.test_timeout
    120
  end

  def go
    File.write(File.join(@server.dir, "go"), "")
  end

  # After a HUP reload, workers of the generation before it serve until
  # they are replaced, with more requests than the new ones: a refork
  # asked for meanwhile must not promote one of them (its mold would run
  # the code from before the reload, and the roll would bring it back).
  def test_a_refork_during_a_reload_promotes_a_worker_of_the_reloaded_code
    serve(args: ["-w", "2"], config: <<~RUBY)
      rollout_max_surge 1
      rollout_max_unavailable 0
      after_fork { |_server, worker| sleep 0.05 until File.exist?("go") if worker.generation >= 1 && worker.number == 1 }
    RUBY
    10.times { @server.get("/") }
    @server.signal("HUP")
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ exited/)
    # Worker 1 (gen 0) serves until its replacement, held in after_fork, is ready.
    @server.signal("USR2")
    assert_equal "promoting worker 0 (gen 1)", @server.wait_for(/refork \(USR2\): (promoting worker \d \(gen \d\)|no fork-safe)/)[1]
    go
    @server.wait_for(/mold \(gen 2\), pid \d+ ready/)
    2.times { |number| @server.wait_for(/worker #{number} \(gen 2\), pid \d+ ready/) }
    assert_match(/200/, @server.get("/").lines.first)
  end

  # A surge replacement not ready within spawn_timeout is killed like any
  # starting worker; the worker it was to replace serves on, and the roll
  # completes once replacements can start.
  def test_a_surge_replacement_past_spawn_timeout_is_killed_and_the_old_worker_serves_on
    serve(args: ["-w", "1"], config: <<~RUBY)
      spawn_timeout 1
      rollout_max_surge 1
      rollout_max_unavailable 0
      prepare_heap nice: 0 # the replacement at the mold's priority: spawn_timeout is its whole budget
      after_fork { |_server, worker| sleep 0.05 until File.exist?("go") if worker.generation >= 1 }
    RUBY
    @server.signal("USR2")
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ was not ready within spawn_timeout \(1s\); killing it/)
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ was killed by SIGKILL/)
    assert_match(/200/, @server.get("/").lines.first)
    refute @server.lines.grep(/worker 0 \(gen 0\), pid \d+ exited/).any?, @server.lines.join
    go
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ exited with status 0/)
  end

  HELD_SURGE = <<~RUBY
    rollout_max_surge 1
    rollout_max_unavailable 0
    after_fork { |_server, worker| sleep 0.05 until File.exist?("go") if worker.generation >= 1 && worker.number == 1 }
  RUBY

  # Worker 1's replacement stays in its after_fork hook (no "go"): its old
  # worker serves on.
  def hold_the_second_replacement
    serve(args: ["-w", "2"], config: HELD_SURGE)
    @server.signal("USR2")
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ exited/)
  end

  # TTOU mid-surge retires the old worker and its replacement together. A
  # worker that never said ready has served nothing, and one held in its
  # start reads no message: it gets TERM.
  def test_ttou_during_a_surge_retires_the_old_worker_and_its_replacement
    hold_the_second_replacement
    @server.signal("TTOU")
    @server.wait_for(/worker 1 \(gen 0\), pid \d+ exited with status 0/)
    @server.wait_for(/worker 1 \(gen 1\), pid \d+ exited with status 0/)
    assert_match(/200/, @server.get("/").lines.first)
    refute @server.lines.grep(/worker \d \(gen \d\), pid \d+ ready/).last.include?("worker 1"), @server.lines.join
  end

  # QUIT does not wait shutdown_timeout (30 s) for a worker held in its
  # start: every process is gone within the harness's 20 s.
  def test_quit_during_a_surge_stops_a_replacement_held_in_its_start
    hold_the_second_replacement
    @server.signal("QUIT")
    assert @server.wait.success?, @server.lines.join
    @server.wait_for(/worker 1 \(gen 1\), pid \d+ exited with status 0/)
    assert_empty in_process_group(@server.pid)
  end

  # rollout_min_ready: after a replacement is ready, the next old worker
  # waits that long. With an hour, the roll stops after the first one:
  # a TTIN worker started and reported ready afterwards (the monitor went
  # round its loop meanwhile), and worker 1 of the old generation still
  # serves. A QUIT then stops everything without waiting out the pause.
  def test_rollout_min_ready_spaces_the_replacements
    serve(args: ["-w", "2"], config: "rollout_min_ready 3600\n")
    @server.signal("USR2")
    @server.wait_for(/mold \(gen 1\) ready; replacing older workers 1 at a time, .*each after the last replacement served 3600 s/)
    first = @server.wait_for(/worker (\d) \(gen 1\), pid \d+ ready/)[1]
    # The replacement came first (rollout_max_surge): the worker it replaces exits once it is ready.
    @server.wait_for(/worker #{first} \(gen 0\), pid \d+ exited with status 0/)
    @server.signal("TTIN")
    @server.wait_for(/worker 2 \(gen 1\), pid \d+ ready/)
    assert_match(/200/, @server.get("/").lines.first)
    exited = @server.lines.grep(/worker \d \(gen 0\), pid \d+ exited/)
    assert_equal 1, exited.size, @server.lines.join
    assert_match(/worker #{first} \(gen 0\)/, exited.first)
    @server.signal("QUIT")
    assert @server.wait.success?, @server.lines.join
    assert_empty in_process_group(@server.pid)
  end

  # A short pause lets the roll finish: every old worker is replaced.
  def test_a_roll_with_rollout_min_ready_completes
    serve(args: ["-w", "2"], config: "rollout_min_ready 0.3\n")
    @server.signal("USR2")
    2.times { |number| @server.wait_for(/worker #{number} \(gen 0\), pid \d+ exited with status 0/) }
    2.times { |number| @server.wait_for(/worker #{number} \(gen 1\), pid \d+ ready/) }
    assert_match(/200/, @server.get("/").lines.first)
  end

  # Live processes of process group `pgid` (a child the monitor lost would
  # be reparented, no longer its descendant, but still in its group).
  def in_process_group(pgid)
    Dir.glob("/proc/[0-9]*/stat").select do |path|
      fields = File.read(path).split(") ").last.split
      fields[2].to_i == pgid && fields[0] != "Z"
    rescue Errno::ENOENT, Errno::ESRCH
      false
    end
  end

  def test_the_rollout_replaces_at_most_rollout_max_unavailable_workers_at_a_time
    serve(config: "workers 3\nrollout_max_unavailable 1\n")
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

  # rollout_max_surge 1 with rollout_max_unavailable 0: each replacement is
  # forked and ready before the worker it replaces stops, so every number
  # is served throughout (the gen-0 workers were ready before the mark).
  # Nothing waits on a replacement's warm-up: it runs at prepare_heap's
  # nice value, where a gen-0 worker's (no worker to replace) does not.
  def test_a_surge_rollout_keeps_every_worker_number_serving
    serve(config: "workers 2\nrollout_max_surge 1\nrollout_max_unavailable 0\nwarmup '/'\nprepare_heap nice: 10\n")
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
    niced = Herd::Heap::LowPriority.unsupported_reason ? /at the caller's priority/ : /at nice 10$/
    assert_equal 2, warm_ups.grep(/\(gen 1\).*#{niced}/).size, warm_ups.join
    assert_equal 0, warm_ups.grep(/\(gen 0\).*priority|\(gen 0\).*nice/).size, warm_ups.join
  end

  # A replacement that dies before it is ready leaves the worker it was to
  # replace serving; the surge is tried again after the recovery's pause,
  # and completes once the new generation can start.
  def test_a_surge_replacement_that_dies_leaves_the_old_worker_serving
    serve(args: ["-w", "1"], config: <<~RUBY)
      rollout_max_surge 1
      rollout_max_unavailable 0
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
