# frozen_string_literal: true

require "test_helper"

# `rake test:slow`: `herd demo` (the server one) boots a server, sends it
# requests, reforks it and measures both generations.
class DemoCommandSlowTest < Herd::Test
  def test_the_server_demo_reforks_and_shows_the_memory_of_both_generations
    out, err, status = herd_cli("demo", "--workers", "2", "--requests", "20", env: {"HERD_DEMO_CONSTANTS" => "2000"})
    assert status.success?, err
    assert_match(/Generation 0: 2 workers/, out)
    assert_match(/herd worker 1 \(gen 0\)/, out)
    assert_match(/Generation 1: the mold and workers forked from the warmest worker/, out)
    assert_match(/herd mold \(gen 1\)/, out)
    assert_match(/Σ PSS of the whole tree: [\d.]+ MiB before reforking, [\d.]+ MiB after /, out)
    assert_includes out, "#{RUBY_ENGINE} #{RUBY_VERSION}, YJIT ", "the figures name their Ruby"
  end
end
