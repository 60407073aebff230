# frozen_string_literal: true

require "test_helper"
require "support/server_harness"

# `rake test:slow`: a hundred reforks, and a refork that waits out
# spawn_timeout and the back-off.
class ServerReforkSlowTest < Herd::Test
  include Herd::ServerTest

  def self.test_timeout
    300
  end

  def test_descriptor_counts_stay_flat_across_100_reforks
    @server = Herd::ServerHarness.new(args: ["-w", "1", "--access-log", "access.log"])
    @server.ready
    counts = {}
    (1..100).each do |generation|
      @server.get("/")
      @server.signal("USR2")
      mold = Integer(@server.wait_for(/mold \(gen #{generation}\), pid (\d+) ready/)[1])
      @server.wait_for(/worker 0 \(gen #{generation}\), pid \d+ ready/)
      # The replacement is forked first (rollout_max_surge): the old worker
      # leaves once it is ready, and its link with it.
      @server.wait_for(/worker 0 \(gen #{generation - 1}\), pid \d+ exited with status 0/)
      @server.wait_for(/mold \(gen #{generation - 1}\), pid \d+ exited with status 0/)
      counts[generation] = [Herd::Procfs.fds(@server.pid), Herd::Procfs.fds(mold)] if [5, 100].include?(generation)
    end
    assert_equal counts[5], counts[100], "monitor and mold descriptor counts after 5 and 100 reforks"
  end

  # The mold of generation 1 hangs in its hook: the monitor kills it at
  # spawn_timeout, generation 0 keeps serving, and refork_after tries again
  # after the back-off, on its own.
  def test_a_new_mold_that_hangs_while_booting_is_killed_and_the_refork_retried
    config = <<~RUBY
      workers 1
      spawn_timeout 3
      refork_after [1]
      after_mold_fork { |server, mold| sleep if mold.generation == 1 }
    RUBY
    serve(config: config)
    @server.get("/")
    @server.wait_for(/refork \(1 requests\): promoting worker 0 \(gen 0\)/)
    @server.wait_for(/mold \(gen 1\), pid \d+ was not ready within spawn_timeout \(3s\); killing it/)
    @server.wait_for(/refork to generation 1 failed \(.+\); generation 0 keeps serving; next attempt in/)
    assert_match(/200/, @server.get("/").lines.first)
    @server.wait_for(/mold \(gen 2\), pid \d+ ready/)
    @server.wait_for(/worker 0 \(gen 2\), pid \d+ ready/)
  end
end
