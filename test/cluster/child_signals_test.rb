# frozen_string_literal: true

require "test_helper"

# QUIT to a worker: at once while it starts (nothing in flight, and a
# start held in an after_fork hook reads no stop message), gracefully once
# it is about to say ready.
class ChildSignalsTest < Herd::Test
  SETUP = <<~RUBY
    require "herd/server"
    $stdout.sync = true
    signals = Herd::Cluster::ChildSignals.new(Herd::Cluster::Log.new($stderr), "worker 0 (gen 0)", Process.pid, starting: true)
  RUBY

  def test_quit_ends_a_starting_worker_at_once
    out, err, status = ruby_run(SETUP + <<~RUBY)
      puts "starting"
      Process.kill("QUIT", Process.pid)
      sleep 5
      puts "still here"
    RUBY
    assert_equal ["starting\n", 0], [out, status.exitstatus], err
  end

  def test_quit_is_graceful_once_the_worker_serves
    out, err, status = ruby_run(SETUP + <<~RUBY)
      signals.serving!
      Process.kill("QUIT", Process.pid)
      IO.select([signals.io], nil, nil, 5)
      p signals.take
    RUBY
    assert status.success?, err
    assert_equal "[:stop]\n", out
  end
end
