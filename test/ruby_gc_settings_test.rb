# frozen_string_literal: true

require "test_helper"
require "herd/ruby_gc_settings"

# The GC settings Ruby started with, read as Ruby reads them.
class RubyGCSettingsTest < Herd::Test
  MIN = "RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO"
  MAX = "RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO"
  GOAL = "RUBY_GC_HEAP_FREE_SLOTS_GOAL_RATIO"

  def teardown
    Herd::RubyGCSettings.taken_out({})
    super
  end

  def ratios(env)
    Herd::RubyGCSettings.free_slot_ratios(env)
  end

  def test_rubys_defaults_when_nothing_is_set
    assert_equal [0.20, 0.40, 0.65], ratios({})
    assert_in_delta 2.0, Herd::RubyGCSettings.oldobject_limit_factor({})
  end

  # herd's own ratios leave Ruby's default goal, which lies above their maximum.
  def test_each_ratio_must_lie_above_the_one_before
    assert_equal [0.10, 0.40, 0.25], ratios(MIN => "0.10", MAX => "0.25")
    assert_equal [0.30, 0.40, 0.65], ratios(MIN => "0.30", MAX => "0.20")
    assert_equal [0.10, 0.40, 0.25], ratios(MIN => "0.10", MAX => "0.25", GOAL => "0.5")
    assert_equal [0.10, 0.20, 0.25], ratios(MIN => "0.10", MAX => "0.25", GOAL => "0.2")
  end

  def test_a_goal_of_zero_is_taken_and_nonsense_is_not
    assert_equal [0.20, 0.0, 0.65], ratios(GOAL => "0")
    assert_equal [0.20, 0.40, 0.65], ratios(MIN => "much", MAX => "", GOAL => "-1")
    assert_in_delta 2.0, Herd::RubyGCSettings.oldobject_limit_factor("RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR" => "x")
    assert_in_delta 3.5, Herd::RubyGCSettings.oldobject_limit_factor("RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR" => "3.5")
  end

  # herd's re-exec gives Ruby its ratios and takes them back out of ENV.
  def test_settings_taken_out_of_the_environment_still_count
    Herd::RubyGCSettings.taken_out(MIN => "0.10", MAX => "0.25")
    assert_equal [0.10, 0.40, 0.25], ratios({})
  end
end
