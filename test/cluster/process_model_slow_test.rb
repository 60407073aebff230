# frozen_string_literal: true

require "test_helper"
require "support/server_harness"

# `rake test:slow`: an app that never boots, tried three times with the
# boot back-off between the tries (several seconds).
class ServerProcessModelSlowTest < Herd::Test
  def teardown
    @server&.cleanup
  end

  def test_an_app_that_cannot_boot_stops_the_server_with_one_clear_error
    @server = Herd::ServerHarness.new(app: "run(")
    status = @server.wait
    assert_equal 1, status.exitstatus
    @server.wait_for(/failed to boot 3 times in a row \(last error: SyntaxError/)
  end
end
