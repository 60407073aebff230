# frozen_string_literal: true

require "test_helper"

# A busy process worker is sent its next batch ahead (Run#prefetch), so it
# never waits for the parent between two batches. What must hold: every
# result arrives once and in place, a batch queued on a worker that dies is
# handed back, the error still names the item the worker was on, a long-lived
# pool's early stop leaves nothing queued for its next call, and the tail is
# shared out one batch at a time.
class PoolPrefetchTest < Herd::Test
  ITEMS = 60
  # Slow enough that batches stay small and many, so the run sends batches
  # ahead for most of its length whatever the machine's speed.
  WORK = ->(i) { sleep 0.003 and i * 10 }

  # Counts the batches sent ahead in this process, and what each left in
  # the source: [items left after it, its size, workers].
  module Spy
    class << self
      attr_accessor :queued, :left
    end
    self.queued = 0
    self.left = []

    def hand_out(worker, pairs, last, queued: false)
      if queued
        Spy.queued += 1
        Spy.left << [@source.size - @handed_out, pairs.size, @workers.size]
      end
      super
    end
  end
  Herd::Pool::Run.prepend(Spy)

  def setup
    super
    Spy.queued = 0
    Spy.left = []
  end

  def test_results_arrive_once_and_in_place_with_batches_sent_ahead
    assert_equal (0...ITEMS).map { |i| i * 10 }, Herd.map(0...ITEMS, processes: 2, &WORK)
    assert_operator Spy.queued, :>, 0, "no batch was sent ahead"
  end

  def test_the_environment_switch_sends_none_ahead
    with_env(Herd::Pool::Run::PREFETCH_ENV => "0") do
      assert_equal (0...ITEMS).map { |i| i * 10 }, Herd.map(0...ITEMS, processes: 2, &WORK)
    end
    assert_equal 0, Spy.queued
  end

  # Nothing hangs on when a batch starts there: timeouts watch the batch a
  # worker is on, start: fires as an item is handed out, and a recycled
  # worker would take its queued batch along.
  def test_timeouts_start_callbacks_and_recycling_send_none_ahead
    [{timeout: 5}, {start: ->(_item, _index) {}}, {max_items_per_worker: 1000}].each do |options|
      assert_equal (0...ITEMS).map { |i| i * 10 }, Herd.map(0...ITEMS, processes: 2, **options, &WORK), options.inspect
    end
    assert_equal 0, Spy.queued
  end

  # The worker dies on item 30 with its next batch already in its socket:
  # with a retry, those items run elsewhere, none lost and none twice (the
  # items before 30 in the dead worker's own batch ran, but their results
  # died with it: those run again, as without batches sent ahead).
  def test_a_batch_queued_on_a_worker_that_dies_is_handed_back
    Dir.mktmpdir do |dir|
      flag = File.join(dir, "crash-once")
      File.write(flag, "")
      log = File.join(dir, "ran")
      results = Herd.map(0...ITEMS, processes: 2, retries: 1) do |i|
        Process.kill(:KILL, Process.pid) if i == 30 && File.exist?(flag) && File.delete(flag)
        File.open(log, "a") { |file| file.puts(i) }
        WORK.call(i)
      end
      assert_equal (0...ITEMS).map { |i| i * 10 }, results
      ran = File.readlines(log).map(&:to_i)
      assert_equal (0...ITEMS).to_a, ran.uniq.sort, "every item ran"
      assert_empty ran.tally.select { |item, count| count > 1 && item > 30 }, "an item after 30 ran twice"
    end
    assert_operator Spy.queued, :>, 0
  end

  def test_a_worker_that_dies_with_a_batch_queued_is_blamed_for_its_own_item
    error = assert_raises(Herd::WorkerDied) do
      Herd.map(0...ITEMS, processes: 2) { |i| (i == 30) ? Process.kill(:KILL, Process.pid) : WORK.call(i) }
    end
    assert_equal 30, error.index
    assert_match(/while working on item 30 \(30\)/, error.message)
  end

  def test_an_error_stops_the_run_and_names_its_item
    error = assert_raises(KeyError) do
      Herd.map(0...ITEMS, processes: 2) { |i| (i == 40) ? raise(KeyError, "item #{i}") : WORK.call(i) }
    end
    assert_equal "item 40", error.message
  end

  # any? stops at its answer; the workers drop their queued batches (the
  # cancel flag is read before each item) and the run waits for them, so the
  # next call starts from empty sockets and gets its own answers.
  def test_a_long_lived_pool_stops_early_and_its_next_call_is_its_own
    Herd::Pool.open(processes: 2, job: ->(i) { sleep 0.003 and i >= 30 }) do |pool|
      assert pool.any?(0...ITEMS)
      refute pool.any?(0...20)
      assert_equal [false] * 30 + [true] * 30, pool.map(0...ITEMS)
    end
    assert_operator Spy.queued, :>, 0
  end

  # The last batches go one at a time to whichever worker is free: a batch
  # is sent ahead only when at least two batches per worker remain after it.
  def test_nothing_is_sent_ahead_into_the_tail
    Herd.map(0...ITEMS, processes: 2, &WORK)
    refute_empty Spy.left
    Spy.left.each do |left, size, workers|
      assert_operator left, :>=, size * workers * 2, "a batch of #{size} sent ahead with #{left} items left"
    end
  end

  # A reusable pool's batches carry the items themselves. A busy worker
  # reads a batch sent ahead only after its current one, so one bigger than
  # the socket's buffer would hold this process in its write meanwhile, and
  # with results as big the other way, both forever: such items go one
  # batch at a time.
  def test_items_too_big_to_wait_in_a_socket_are_not_sent_ahead
    big = Array.new(40) { |i| i.to_s * 400_000 }
    Herd::Pool.open(processes: 2, job: ->(text) { sleep 0.003 and text }) do |pool|
      assert_equal big, pool.map(big)
    end
    assert_equal 0, Spy.queued
  end

  private

  def with_env(values)
    saved = values.to_h { |key, _| [key, ENV[key]] }
    values.each { |key, value| ENV[key] = value }
    yield
  ensure
    saved.each { |key, value| ENV[key] = value }
  end
end
