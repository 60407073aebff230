# frozen_string_literal: true

require "test_helper"
require "support/slow_clients"

# `rake test:slow`: a held head waited out through the worker's stop grace.
class SlowClientsSlowTest < Herd::Test
  include Herd::SlowClients

  # Closing a held connection on stop would reset a client whose request
  # is on its way: its head gets RequestLoop::HEAD_GRACE more seconds, then 408.
  def test_a_graceful_stop_answers_the_heads_it_holds
    start("http read_timeout: 30\n")
    open_slow(1)
    assert_match(%r{\AHTTP/1.1 200 }, @server.get("/")) # accepted after the slow one: it is held
    @server.signal("QUIT")
    assert_match(%r{\AHTTP/1.1 408 }, @slow.first.read, "answered, not reset")
    @server.wait_for(/408 Request Timeout for 127\.0\.0\.1: the worker is stopping/)
    @server.wait
  end
end
