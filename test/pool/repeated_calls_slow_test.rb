# frozen_string_literal: true

require_relative "repeated_calls_test"

# The issue's bound, over 1,000 calls (several minutes on 2 cores).
class PoolRepeatedCallsSlowTest < PoolRepeatedCallsTest
  def self.test_timeout
    1800
  end

  def test_rss_stays_within_ten_percent_over_a_thousand_calls
    baseline, final = rss_over(1000)
    assert_operator final, :<=, baseline * 1.10, "RSS #{baseline / 1024} MiB -> #{final / 1024} MiB over 1,000 calls"
  end
end
