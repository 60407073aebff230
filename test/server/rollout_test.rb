# frozen_string_literal: true

require "test_helper"
require "herd/server"
require "support/server_harness"

# What can happen while workers roll onto a new mold: a refork asked for
# mid-roll, a replacement that never gets ready.
class ServerRolloutTest < Herd::Test
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
      refork_max_surge 1
      refork_max_unavailable 0
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
      refork_max_surge 1
      refork_max_unavailable 0
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
    refork_max_surge 1
    refork_max_unavailable 0
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

  # refork_min_ready: after a replacement is ready, the next old worker
  # waits that long. With an hour, the roll stops after the first one:
  # a TTIN worker started and reported ready afterwards (the monitor went
  # round its loop meanwhile), and worker 1 of the old generation still
  # serves. A QUIT then stops everything without waiting out the pause.
  def test_refork_min_ready_spaces_the_replacements
    serve(args: ["-w", "2"], config: "refork_min_ready 3600\n")
    @server.signal("USR2")
    @server.wait_for(/mold \(gen 1\) ready; replacing older workers 1 at a time, .*each after the last replacement served 3600 s/)
    first = @server.wait_for(/worker (\d) \(gen 1\), pid \d+ ready/)[1]
    # The replacement came first (refork_max_surge): the worker it replaces exits once it is ready.
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
  def test_a_roll_with_refork_min_ready_completes
    serve(args: ["-w", "2"], config: "refork_min_ready 0.3\n")
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
end
