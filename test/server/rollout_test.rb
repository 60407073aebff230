# frozen_string_literal: true

require "test_helper"
require "herd/server"
require "support/server_harness"

# What can happen while workers roll onto a new mold: a refork asked for
# mid-roll, a replacement that never gets ready.
class ServerRolloutTest < Herd::Test
  def self.test_timeout
    120
  end

  def teardown
    @server&.cleanup
  end

  def serve(**options)
    @server = Herd::ServerHarness.new(**options)
    @server.ready
    @server
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
end
