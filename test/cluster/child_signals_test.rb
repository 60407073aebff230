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

  def test_tstp_asks_for_quiet_instead_of_stopping_the_process
    out, err, status = ruby_run(SETUP + <<~RUBY)
      signals.serving!
      Process.kill("TSTP", Process.pid)
      IO.select([signals.io], nil, nil, 5)
      p signals.take
    RUBY
    assert status.success?, err
    assert_equal "[:quiet]\n", out
  end

  # Job workers: TERM and INT are graceful stops, like QUIT (and end a
  # worker still starting at once, like QUIT).
  def test_term_and_int_stop_a_job_worker_gracefully
    out, err, status = ruby_run(SETUP.sub("starting: true", "starting: true, graceful: true") + <<~RUBY)
      signals.serving!
      Process.kill("TERM", Process.pid)
      Process.kill("INT", Process.pid)
      sleep 0.2
      IO.select([signals.io], nil, nil, 5)
      p signals.take
    RUBY
    assert status.success?, err
    assert_equal "[:stop, :stop]\n", out
  end

  def test_term_ends_a_starting_job_worker_at_once
    out, err, status = ruby_run(SETUP.sub("starting: true", "starting: true, graceful: true") + <<~RUBY)
      puts "starting"
      Process.kill("TERM", Process.pid)
      sleep 5
      puts "still here"
    RUBY
    assert_equal ["starting\n", 0], [out, status.exitstatus], err
  end
end
