# frozen_string_literal: true

require "test_helper"

# Sources without a count: endless ranges (whose size is nil or Infinity)
# and enumerators of unknown or infinite size, stopped early.
class PoolEndlessTest < Herd::Test
  def test_a_range_up_to_infinity_runs_until_break
    assert_nil Herd.each(1..Float::INFINITY, processes: 2) { |i| raise Herd::Break if i > 50 }
    assert_equal :done, Herd.map(1..Float::INFINITY, processes: 2) { |i| (i > 30) ? raise(Herd::Break.new(:done)) : i }
    assert Herd.any?(1..Float::INFINITY, processes: 2) { |i| i > 100 }
    refute Herd.all?(1..Float::INFINITY, processes: 2) { |i| i < 100 }
  end

  def test_the_size_infinity_is_not_taken_as_a_count
    source = Herd::Pool::Source.for(1..Float::INFINITY)
    assert_nil source.size
    refute source.exhausted?
    assert_equal [[0, 1], [1, 2], [2, 3]], source.take(3)
    sizer = Herd::Pool::ChunkSizer.new(fixed: nil, total: Float::INFINITY, workers: 2)
    sizer.record(100, 0.0001)
    assert_equal Herd::Pool::ChunkSizer::MAX, sizer.next_size(10)
  end

  def test_break_in_the_block_stops_the_call_in_every_kind_of_worker
    assert_nil Herd.each(1.., processes: 2) { |i| break if i > 50 }
    assert_nil Herd.each(1..Float::INFINITY, processes: 2) { |i| break :lost if i > 50 }, "a worker process cannot send break's value"
    assert_equal :kept, Herd.each(1..Float::INFINITY, threads: 2) { |i| break :kept if i > 50 }
    assert_nil Herd.each(1..Float::INFINITY, processes: 0) { |i| break if i > 50 }
  end

  def test_a_break_leaves_the_pool_usable
    job = lambda do |i|
      (i > 20) ? raise(Herd::Break.new(i)) : i
    end
    Herd::Pool.open(processes: 2, job: job) do |pool|
      assert_operator pool.map(1..Float::INFINITY), :>, 20
      assert_equal [1, 2, 3], pool.map([1, 2, 3])
    end
  end

  def test_enumerators_of_unknown_or_infinite_size
    infinite = Enumerator.new(Float::INFINITY) do |yielder|
      count = 0
      loop { yielder << (count += 1) }
    end
    assert_equal "enough", Herd.map(infinite, processes: 2) { |i| (i > 20) ? raise(Herd::Break, "enough") : i }
    assert_nil Herd.each((1..Float::INFINITY).lazy.map { |i| i * 2 }, processes: 2) { |i| break if i > 40 }
    unknown = Enumerator.new { |yielder| 10.times { |i| yielder << i } }
    assert_nil unknown.size
    assert_equal (0...10).map { |i| i * 3 }, Herd.map(unknown, processes: 2) { |i| i * 3 }
  end

  def test_progress_with_no_total
    output = StringIO.new
    assert_nil Herd.each(1..Float::INFINITY, processes: 2, progress: {output: output, force: true}) { |i| break if i > 10 }
  end
end
