# frozen_string_literal: true

require "test_helper"
require "support/prometheus_text"

# The strict parser /metrics is checked with: it must refuse what the
# format refuses, or a passing /metrics test would mean nothing.
class PrometheusTextTest < Herd::Test
  VALID = <<~TEXT
    # HELP http_requests_total The total number of HTTP requests, with a \\\\ and a \\n.
    # TYPE http_requests_total counter
    http_requests_total{method="post",code="200"} 1027 1395066363000
    http_requests_total{method="post",code="400",} 3 1395066363000

    # A free comment.
    msdos_file_access_time_seconds{path="C:\\\\DIR\\\\FILE.TXT",error="Cannot find file:\\n\\"FILE.TXT\\""} 1.458255915e9
    metric_without_timestamp_and_labels 12.47
    something_weird{problem="division by zero"} +Inf -3982045
    # HELP http_request_duration_seconds A histogram.
    # TYPE http_request_duration_seconds histogram
    http_request_duration_seconds_bucket{le="0.05"} 24054
    http_request_duration_seconds_bucket{le="+Inf"} 144320
    http_request_duration_seconds_sum 53423
    http_request_duration_seconds_count 144320
    nan_value NaN
  TEXT

  def parse(text)
    Herd::PrometheusText.parse(text)
  end

  def test_the_formats_own_example_parses
    families = parse(VALID)
    requests = families.fetch("http_requests_total")
    assert_equal "counter", requests.type
    assert_equal "The total number of HTTP requests, with a \\ and a \n.", requests.help
    assert_equal [1027.0, 3.0], requests.samples.map(&:value)
    assert_equal "C:\\DIR\\FILE.TXT", families.fetch("msdos_file_access_time_seconds").samples.first.labels["path"]
    assert_equal Float::INFINITY, families.fetch("something_weird").samples.first.value
    assert_equal 4, families.fetch("http_request_duration_seconds").samples.size
    assert families.fetch("nan_value").samples.first.value.nan?
  end

  def test_malformed_lines_are_refused
    {
      "no trailing newline" => "a 1",
      "a bad metric name" => "1abc 1\n",
      "a dash in a name" => "my-metric 1\n",
      "no value" => "a\n",
      "a bad value" => "a 1,5\n",
      "a unit in the value" => "a 12kB\n",
      "a non-integer timestamp" => "a 1 2.5\n",
      "something after the timestamp" => "a 1 2 3\n",
      "an unquoted label value" => "a{b=c} 1\n",
      "an unterminated label value" => "a{b=\"c} 1\n",
      "a bad escape" => "a{b=\"\\t\"} 1\n",
      "a duplicate label" => "a{b=\"1\",b=\"2\"} 1\n",
      "a reserved label name" => "a{__b=\"1\"} 1\n",
      "a missing comma" => "a{b=\"1\" c=\"2\"} 1\n",
      "no space before the value" => "a{b=\"1\"}1\n",
      "an unknown type" => "# TYPE a countr\na 1\n",
      "TYPE after samples" => "a 1\n# TYPE a counter\n",
      "two TYPE lines" => "# TYPE a counter\n# TYPE a counter\na 1\n",
      "two HELP lines" => "# HELP a x\n# HELP a y\na 1\n",
      "interleaved families" => "a 1\nb 1\na{x=\"1\"} 2\n",
      "a duplicate series" => "a{x=\"1\"} 1\na{x=\"1\"} 2\n",
      "a histogram bucket without le" => "# TYPE h histogram\nh_bucket 1\n",
      "a carriage return" => "a 1\r\n"
    }.each do |what, text|
      assert_raises(Herd::PrometheusText::Invalid, "#{what} must be refused: #{text.inspect}") { parse(text) }
    end
  end
end
