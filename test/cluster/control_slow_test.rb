# frozen_string_literal: true

require "test_helper"
require "support/control_server"

# `rake test:slow`: the control endpoint's read timeout, waited out.
class ServerControlSlowTest < Herd::ControlServerTest
  # The endpoint is served from the monitor's loop: a client that connects
  # and says nothing must hold up neither other clients nor the server, and
  # is dropped once its time is up.
  def test_a_silent_client_holds_nothing_up_and_is_dropped
    address = serve_with_control(config: "workers 1\n")
    silent = UNIXSocket.new(address.delete_prefix("unix:"))
    assert_equal 200, control_get(address, "/stats").first
    assert_match(/200 OK/, @server.get("/"))
    assert silent.wait_readable(10), "dropped within its read timeout"
    assert_equal "", silent.read
  ensure
    silent&.close
  end
end
