# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require_relative "../../rakelib/test_shards"

# rake test's runner (rakelib/test_shards.rb): how files are dealt out, and
# that a shard's failure fails the whole run.
class TestShardsTest < Herd::Test
  def test_the_count_defaults_to_the_cpus_at_most_two_and_refuses_garbage
    assert_equal [Etc.nprocessors, 2].min, TestShards.count({})
    assert_equal 1, TestShards.count("HERD_TEST_SHARDS" => "1")
    assert_equal 3, TestShards.count("HERD_TEST_SHARDS" => "3")
    error = assert_raises(ArgumentError) { TestShards.count("HERD_TEST_SHARDS" => "two") }
    assert_match(/HERD_TEST_SHARDS="two": give a number/, error.message)
  end

  def test_files_are_dealt_out_by_their_recorded_seconds
    weights = {"a" => 10.0, "b" => 6.0, "c" => 5.0, "d" => 1.0}
    shards = TestShards.new(weights.keys + ["new"], shards: 2)
    shards.stub(:recorded_weights, weights) do
      groups = shards.send(:split)
      # "new" weighs the median (6.0); heaviest first, each to the lighter shard: 10+5 against 6+6+1
      assert_equal [%w[a c], %w[b d new]], groups
    end
  end

  def test_a_failing_shard_fails_the_run_and_every_report_is_shown
    Dir.mktmpdir do |dir|
      passing = File.join(dir, "passing_test.rb")
      failing = File.join(dir, "failing_test.rb")
      File.write(passing, "require 'minitest/autorun'\nclass PassingT < Minitest::Test\n  def test_ok = assert(true)\nend\n")
      File.write(failing, "require 'minitest/autorun'\nclass FailingT < Minitest::Test\n  def test_no = flunk('on purpose')\nend\n")
      out, = capture_subprocess_io do
        refute TestShards.new([passing, failing], shards: 2, options: []).run
      end
      assert_match(/on purpose/, out)
      assert_match(/== test shard 2 of 2 \(1 files\)/, out)
      assert_equal 2, out.scan("1 runs, 1 assertions").size
    end
  end
end
