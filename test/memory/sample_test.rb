# frozen_string_literal: true

require "test_helper"
require "herd/memory"

class SampleTest < Herd::Test
  Sample = Herd::Memory::Sample

  def sample(**fields)
    Sample.new(rss: 100, pss: 60, shared_clean: 30, shared_dirty: 20, private_clean: 10, private_dirty: 40, **fields)
  end

  def test_derived_sizes
    s = sample

    assert_equal 50, s.uss
    assert_equal 50, s.shared
    assert_in_delta 0.5, s.shared_ratio
  end

  def test_shared_ratio_of_nothing_resident_is_zero
    assert_in_delta 0.0, Sample.zero.shared_ratio
  end

  def test_optional_fields_default_to_nil_and_required_ones_to_zero
    s = Sample.new(pss: 5)

    assert_equal 0, s.rss
    assert_nil s.pss_anon
    assert_nil s.swap
  end

  def test_is_immutable
    assert_predicate sample, :frozen?
    assert_raises(FrozenError) { sample.rss = 1 }
  end

  def test_sum_is_field_wise_and_nil_safe
    total = sample(swap: 8) + sample(pss_dirty: 4)

    assert_equal 200, total.rss
    assert_equal 120, total.pss
    assert_equal 100, total.uss
    assert_equal 8, total.swap # missing on one side counts as 0
    assert_equal 4, total.pss_dirty
    assert_nil total.pss_anon # missing on both sides stays unknown
  end

  def test_sum_with_zero_is_identity
    assert_equal sample(swap: 3), Sample.zero + sample(swap: 3)
  end

  def test_sum_rejects_other_types
    assert_raises(TypeError) { sample + 1 }
  end

  def test_to_h_round_trips
    s = sample(pss_anon: 7, anon_huge_pages: 0)

    assert_equal s, Sample.new(**s.to_h)
    assert_equal Sample.members.sort, s.to_h.keys.sort
  end
end
