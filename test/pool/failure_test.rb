# frozen_string_literal: true

require "test_helper"

class PoolFailureTest < Herd::Test
  class NeedsContext < StandardError
    def initialize(message)
      super
      @callback = proc {} # a Proc: Marshal refuses this exception
    end
  end

  def test_exception_keeps_class_message_child_backtrace_and_cause
    error = assert_raises(ArgumentError) do
      Herd.map(1..10, processes: 2) do |i|
        next i unless i == 7

        begin
          raise KeyError, "inner #{i}"
        rescue KeyError
          raise ArgumentError, "outer #{i}" # OUTER_RAISE
        end
      end
    end
    assert_equal "outer 7", error.message
    raise_line = File.foreach(__FILE__).find_index { |line| line.end_with?("# OUTER_RAISE\n") } + 1
    assert_match(/failure_test\.rb:#{raise_line}:in /, error.backtrace.first, "the child's own backtrace, from the raise")
    assert_match(/\(herd\) raised in worker \d \(pid \d+\) on item 6/, error.backtrace.last)
    assert_instance_of KeyError, error.cause
    assert_equal "inner 7", error.cause.message
  end

  def test_an_unmarshallable_exception_arrives_as_remote_error
    error = assert_raises(Herd::RemoteError) do
      Herd.map(1..3, processes: 2) { |i| (i == 2) ? raise(NeedsContext, "no db") : i }
    end
    assert_equal "PoolFailureTest::NeedsContext", error.remote_class
    assert_equal "PoolFailureTest::NeedsContext: no db", error.message
    assert_match(/failure_test\.rb/, error.backtrace.first)
  end

  def test_an_unmarshallable_result_names_the_item_and_the_worker_lives_on
    Herd::Pool.open(processes: 1, job: ->(i) { (i == 2) ? proc {} : i }) do |pool|
      pids = pool.pids
      error = assert_raises(Herd::SerializationError) { pool.map(1..3) }
      assert_equal 1, error.index
      assert_match(/result of item 1 could not be sent back .*Proc/, error.message)
      assert_equal [1, 3], pool.map([1, 3])
      assert_equal pids, pool.pids, "the worker must survive a bad result"
    end
  end

  def test_a_killed_worker_raises_worker_died_with_pid_item_and_signal
    error = assert_raises(Herd::WorkerDied) do
      Herd.map(1..10, processes: 2) { |i| (i == 5) ? Process.kill(:KILL, Process.pid) : i }
    end
    assert_equal 4, error.index
    assert error.status.signaled?
    assert_equal Signal.list["KILL"], error.status.termsig
    assert_match(/worker \d \(pid #{error.pid}\) was killed by SIGKILL while working on item 4 \(5\)/, error.message)
    assert_match(/retries:/, error.message)
  end

  def test_exit_bang_in_the_block_raises_worker_died_with_the_exit_status
    error = assert_raises(Herd::WorkerDied) { Herd.map(1..4, processes: 2) { |i| (i == 3) ? exit!(3) : i } }
    assert_equal 3, error.status.exitstatus
    assert_match(/exited with status 3 while working on item 2/, error.message)
  end

  def test_retries_replace_the_worker_and_retry_the_item
    Dir.mktmpdir do |dir|
      flag = File.join(dir, "crash-once")
      File.write(flag, "")
      results = Herd.map(1..6, processes: 2, retries: 1) do |i|
        Process.kill(:KILL, Process.pid) if i == 4 && File.exist?(flag) && File.delete(flag)
        i * 10
      end
      assert_equal [10, 20, 30, 40, 50, 60], results
    end
  end

  def test_retries_run_out
    error = assert_raises(Herd::WorkerDied) do
      Herd.map(1..3, processes: 1, retries: 2) { |i| (i == 2) ? Process.kill(:KILL, Process.pid) : i }
    end
    assert_match(/after 2 retries/, error.message)
  end

  # A second: a fast item on a loaded machine must not reach it.
  def test_a_stuck_item_times_out_and_names_the_item
    [{processes: 2}, {threads: 2}, {processes: 0}].each do |mode|
      error = assert_raises(Herd::TimeoutError, mode.inspect) do
        Herd.map(%w[fast stuck fast], timeout: 1.0, **mode) { |word| (word == "stuck") ? sleep(30) : word }
      end
      assert_equal 1, error.index
      assert_in_delta 1.0, error.seconds
      assert_match(/item 1 \("stuck"\) ran longer than the 1.0s timeout/, error.message)
    end
  end

  def test_a_timeout_is_rescued_as_timeout_error_and_as_every_herd_error
    [::Timeout::Error, Herd::ItemError, Herd::Error, StandardError].each do |rescued|
      caught = begin
        Herd.map([1], timeout: 0.05, processes: 0) { sleep 5 }
      rescue rescued => e
        e
      end
      assert_instance_of Herd::TimeoutError, caught, rescued.name
    end
    error = Herd::TimeoutError.new("x", seconds: 1.0, index: 3, pid: 9, worker_number: 0)
    assert_kind_of ::Timeout::Error, error
    assert_kind_of Herd::ItemError, error
    assert_kind_of Herd::Error, error
    refute_kind_of Herd::WorkerDied, error
    refute(Herd::WorkerDied === error, "a WorkerDied rescue does not catch timeouts")
    assert_equal [3, 9, 0, 1.0], [error.index, error.pid, error.worker_number, error.seconds]
  end

  # `Timeout` inside `module Herd` (herd's code or an app's) is the standard
  # library's, and herd defines no `Herd::Timeout`.
  def test_herd_does_not_shadow_the_standard_timeout
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      module Herd
        print Timeout.timeout(1) { :stdlib }, " "
      end
      print Herd.const_defined?(:Timeout, false)
    RUBY
    assert status.success?, err
    assert_equal "stdlib false", out
    assert_empty err
  end

  def test_on_timeout_continue_puts_the_error_in_place_and_carries_on
    Herd::Pool.open(processes: 2, job: ->(i) { (i == 2) ? sleep(30) : i }) do |pool|
      before = pool.pids
      results = pool.map(1..4, timeout: 0.2, on_timeout: :continue)
      assert_equal [1, 3, 4], results.values_at(0, 2, 3)
      assert_instance_of Herd::TimeoutError, results[1]
      refute_equal before.sort, pool.pids.sort, "the stuck worker is replaced"
      assert_equal [5], pool.map([5])
    end
  end

  def test_an_after_fork_failure_is_raised_in_the_parent
    error = assert_raises(RuntimeError) do
      Herd.map(1..4, processes: 2, after_fork: ->(_) { raise "database unreachable" }) { |i| i }
    end
    assert_equal "database unreachable", error.message
  end

  def test_a_raising_finish_callback_stops_the_run_and_leaves_no_worker
    pids = []
    assert_raises(ZeroDivisionError) do
      Herd.map(1..10, processes: 2, chunk_size: 1, finish: ->(_, _, pid) {
        pids << pid
        1 / 0
      }) { Process.pid }
    end
    pids.uniq.each { |pid| assert_raises(Errno::ECHILD) { Process.waitpid(pid, Process::WNOHANG) } }
  end
end
