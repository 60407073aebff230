# frozen_string_literal: true

require "test_helper"
require "support/server_harness"

# What the mold says about an app's boot: advice only where the user can
# follow it.
class ServerBootWarningsTest < Herd::Test
  APP = <<~RUBY
    reaper = Thread.new { sleep }
    reaper.thread_variable_set(:fork_safe, true)
    reaper.name = "Pool Reaper"
    Thread.new { sleep }.name = "metrics flusher"
    run ->(env) { [200, {}, ["ok"]] }
  RUBY

  def teardown
    @server&.cleanup
  end

  def test_threads_marked_fork_safe_get_no_advice
    @server = Herd::ServerHarness.new(app: APP, args: ["-w", "1"])
    @server.ready
    warning = @server.wait_for(/mold \(gen 0\): warning: (\d+) thread\(s\) started at boot \(([^)]*)\) will not exist in workers/)
    assert_equal ["1", "metrics flusher"], warning.captures
    refute_match(/Pool Reaper/, @server.lines.grep(/warning/).join)
  end
end
