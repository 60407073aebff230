# frozen_string_literal: true

require "test_helper"
require "support/server_harness"

# `rake test:slow`: a hundred reforks.
class ServerReforkSlowTest < Herd::Test
  def self.test_timeout
    300
  end

  def teardown
    @server&.cleanup
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
      counts[generation] = [fds(@server.pid), fds(mold)] if [5, 100].include?(generation)
    end
    assert_equal counts[5], counts[100], "monitor and mold descriptor counts after 5 and 100 reforks"
  end

  private

  def fds(pid)
    Dir.children("/proc/#{pid}/fd").size
  end
end
