# frozen_string_literal: true

require "test_helper"
require "tmpdir"

# Herd.map's workers are forked with their first batch in memory, and exit
# on their own after a batch that leaves the source exhausted.
class PoolRetiringTest < Herd::Test
  # A message queue standing in for a worker's channel.
  class FakeTransport
    attr_reader :delivered, :received

    def initialize(*messages)
      @messages = messages
      @delivered = []
      @received = 0
    end

    def receive
      @received += 1
      @messages.shift
    end

    def deliver(message)
      @delivered << message
    end
  end

  def loop_with(transport)
    Herd::Pool::WorkerLoop.new(job: ->(item) { item * 10 }, transport: transport,
      item_board: Herd::Pool::ItemBoard.new(1, shared: false), slot: 0, resolver: ->(index) { index + 1 })
  end

  def test_a_worker_loop_runs_the_batch_it_was_forked_with_before_reading_anything
    transport = FakeTransport.new([:batch, 7, false, false, [1], nil, false], [:stop])
    loop_with(transport).run([:batch, 7, false, false, [0], nil, false])
    assert_equal [[:results, 7, [[0, :ok, 10]], true], [:results, 7, [[1, :ok, 20]], true]], transport.delivered.map { |m| m.first(4) }
    assert(transport.delivered.all? { |message| message[4].is_a?(Float) && message[4] >= 0 }, "each says how long its batch took")
    assert_equal 2, transport.received, "the next batch, then the stop"
  end

  def test_a_worker_loop_ends_after_a_batch_marked_last_without_reading_more
    transport = FakeTransport.new([:batch, 7, false, false, [1], nil, false])
    loop_with(transport).run([:batch, 7, false, false, [0], nil, true])
    assert_equal [[:results, 7, [[0, :ok, 10]], true]], transport.delivered.map { |m| m.first(4) }
    assert_equal 0, transport.received
  end

  # Each worker's batch leaves the source exhausted: it must be gone (a
  # zombie until the call reaps it) while the call is still collecting,
  # before any stop message could have been sent.
  def test_workers_given_their_last_batch_exit_before_the_call_ends
    exited = []
    pids = Herd.map([1, 2], processes: 2, prepare_heap: false,
      finish: ->(_item, _index, pid) { exited << zombie_within?(pid, 10) }) { Process.pid }
    assert_equal [true, true], exited
    assert_equal 2, pids.uniq.size
    assert_no_children_left(pids)
  end

  def test_a_worker_that_never_gets_an_item_is_never_forked
    forks = 0
    result = Herd.map([5].each, processes: 3, before_fork: -> { forks += 1 }) { |i| i * 2 }
    assert_equal [10], result
    assert_equal 1, forks
  end

  def test_items_of_a_worker_killed_in_its_last_batch_are_retried_on_a_replacement
    Dir.mktmpdir do |dir|
      marker = File.join(dir, "killed")
      results = Herd.map(1..2, processes: 2, retries: 1) do |item|
        if item == 2 && !File.exist?(marker)
          File.write(marker, Process.pid.to_s)
          Process.kill(:KILL, Process.pid)
        end
        [item, Process.pid]
      end
      assert_equal [1, 2], results.map(&:first)
      refute_equal Integer(File.read(marker)), results.last.last, "a fresh worker ran the retry"
      assert_no_children_left(results.map(&:last) << Integer(File.read(marker)))
    end
  end

  def test_a_reusable_pools_workers_stay_for_its_next_call
    Herd::Pool.open(processes: 2, job: ->(item) { [item, Process.pid] }) do |pool|
      first = pool.map([1, 2]).map(&:last)
      second = pool.map([3, 4]).map(&:last)
      assert_equal pool.pids.sort, (first | second).sort
    end
  end

  private

  # Reads /proc: waiting on the pid would reap it behind the pool's back.
  def zombie_within?(pid, seconds)
    deadline = Herd::Clock.now + seconds
    until Herd::Clock.now > deadline
      return true if File.read("/proc/#{pid}/stat").split(") ").last.start_with?("Z")

      sleep 0.005
    end
    false
  rescue Errno::ENOENT
    true # reaped already
  end

  def assert_no_children_left(pids)
    pids.uniq.each do |pid|
      assert_raises(Errno::ECHILD, Errno::ESRCH, "worker #{pid} left behind") { Process.waitpid(pid, Process::WNOHANG) }
    end
  end
end
