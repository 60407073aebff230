# frozen_string_literal: true

require "test_helper"
require "tmpdir"

class ChunkSizerTest < Herd::Test
  def sizer(**options)
    Herd::Pool::ChunkSizer.new(fixed: nil, total: nil, workers: 2, **options)
  end

  def test_starts_with_one_item_and_grows_for_fast_items
    chunks = sizer
    assert_equal 1, chunks.next_size(0)
    chunks.record(1, 0.000_05) # 50 us for one item, round trip included
    assert_operator chunks.next_size(1), :>=, 100
  end

  def test_slow_items_stay_in_small_batches
    chunks = sizer
    chunks.record(1, 0.5)
    assert_equal 1, chunks.next_size(1)
  end

  def test_a_known_total_caps_batches_so_the_tail_stays_balanced
    chunks = Herd::Pool::ChunkSizer.new(fixed: nil, total: 1000, workers: 2)
    chunks.record(100, 0.0001)
    assert_equal 250, chunks.next_size(0)
    assert_equal 1, chunks.next_size(999)
  end

  def test_a_fixed_size_wins
    assert_equal 7, Herd::Pool::ChunkSizer.new(fixed: 7, total: 3, workers: 2).next_size(0)
  end

  # 2.5 ms items, one batch of which took 80 ms (a worker's first GC).
  def test_one_slow_batch_weighs_at_most_four_times_the_estimate
    chunks = sizer
    chunks.record(4, 0.01)
    assert_equal 4, chunks.next_size(4)
    chunks.record(1, 0.08)
    assert_equal 2, chunks.next_size(5), "estimate 2.5 -> 4.75 ms, not 25.75"
  end

  def test_items_that_really_got_slower_shrink_batches_within_two
    chunks = sizer
    chunks.record(4, 0.01)
    2.times { chunks.record(1, 0.1) }
    assert_equal 1, chunks.next_size(8)
  end
end

class SourceTest < Herd::Test
  def test_arrays_and_integer_ranges_are_indexed
    assert_equal 3, Herd::Pool::Source.for([1, 2, 3]).size
    range = Herd::Pool::Source.for(5..7)
    assert_equal [[0, 5], [1, 6]], range.take(2)
    assert_equal 7, range.resolver.call(2)
  end

  def test_retried_items_come_first
    source = Herd::Pool::Source.for(%w[a b c])
    first = source.take(2)
    source.retry(first.drop(1))
    assert_equal [[1, "b"], [2, "c"]], source.take(2)
    assert source.exhausted?
  end

  def test_endless_sources_never_exhaust
    source = Herd::Pool::Source.for(1..)
    assert_equal [[0, 1], [1, 2]], source.take(2)
    refute source.exhausted?
    assert_nil source.size
  end
end

class CPUTest < Herd::Test
  def test_environment_override
    assert_equal 3, Herd::CPU.count(env: {"HERD_PROCESSES" => "3"})
    error = assert_raises(Herd::Error) { Herd::CPU.count(env: {"HERD_PROCESSES" => "lots"}) }
    assert_match(/HERD_PROCESSES must be a whole number/, error.message)
  end

  def test_cgroup_v2_quota_rounds_up_and_caps
    Dir.mktmpdir do |root|
      File.write(File.join(root, "cpu.max"), "150000 100000\n")
      assert_equal 2, Herd::CPU.cgroup_limit(root)
      assert_operator Herd::CPU.count(env: {}, cgroup_root: root), :<=, 2
      File.write(File.join(root, "cpu.max"), "max 100000\n")
      assert_nil Herd::CPU.cgroup_limit(root)
    end
  end

  def test_cgroup_v1_quota
    Dir.mktmpdir do |root|
      Dir.mkdir(File.join(root, "cpu"))
      File.write(File.join(root, "cpu", "cpu.cfs_quota_us"), "50000\n")
      File.write(File.join(root, "cpu", "cpu.cfs_period_us"), "100000\n")
      assert_equal 1, Herd::CPU.cgroup_limit(root)
      assert_equal 1, Herd::CPU.count(env: {}, cgroup_root: root)
    end
  end

  def test_at_least_one
    assert_operator Herd::CPU.count(env: {}), :>=, 1
  end
end

class HeapPolicyTest < Herd::Test
  POLICY = Herd::Pool::HeapPolicy

  def test_false_never_prepares_and_a_hash_always_does
    assert_nil POLICY.options(false, one_call: true)
    assert_equal({compact: true}, POLICY.options({compact: true}, one_call: true, env: {POLICY::MIN_RSS_ENV => "1000000"}))
  end

  def test_a_long_lived_pool_always_prepares
    assert_equal({}, POLICY.options(true, one_call: false, env: {POLICY::MIN_RSS_ENV => "1000000"}))
  end

  def test_a_one_call_pool_prepares_from_the_threshold_on
    assert_equal({}, POLICY.options(true, one_call: true, env: {POLICY::MIN_RSS_ENV => "0"}))
    assert_nil POLICY.options(true, one_call: true, env: {POLICY::MIN_RSS_ENV => "1000000"})
  end

  def test_the_threshold_is_in_mib_and_defaults_to_min_rss
    assert_equal POLICY::MIN_RSS, POLICY.threshold({})
    assert_equal 3 << 20, POLICY.threshold({POLICY::MIN_RSS_ENV => "3"})
    error = assert_raises(Herd::ConfigError) { POLICY.threshold({POLICY::MIN_RSS_ENV => "lots"}) }
    assert_match(/HERD_PREPARE_HEAP_MIN_MB="lots": must be a number of MiB/, error.message)
  end

  def test_resident_bytes_reads_this_process
    assert_operator POLICY.resident_bytes, :>, 1 << 20
  end
end
