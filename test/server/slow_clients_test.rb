# frozen_string_literal: true

require "test_helper"
require "support/server_harness"

# Slow clients (slowloris) without a proxy in front: a worker holds the
# connections whose head is still arriving and serves the clients that are
# ready meanwhile; a head that takes longer than read_timeout gets 408.
class SlowClientsTest < Herd::Test
  PARTIAL_HEAD = "GET /slow HTTP/1.1\r\nHost: localhost\r\nX-Slow: "

  def teardown
    @slow&.each { |socket| socket.close unless socket.closed? }
    @server&.cleanup
  end

  def start(config)
    @server = Herd::ServerHarness.new(config: "workers 1\n#{config}")
    @server.ready
  end

  def open_slow(count)
    @slow = Array.new(count) do
      TCPSocket.new("127.0.0.1", @server.port).tap { |socket| socket.write(PARTIAL_HEAD) }
    end
  end

  def test_ready_clients_are_served_while_slow_heads_are_held
    start("http read_timeout: 30\n")
    open_slow(20)
    # One worker, and 20 connections ahead of these in the backlog: before,
    # each of them held the worker for read_timeout (30 s) in turn.
    3.times { assert_match(%r{\AHTTP/1.1 200 .*path=/\n\z}m, @server.get("/")) }
    @slow.each do |socket|
      assert_equal :wait_readable, socket.read_nonblock(1, exception: false), "a slow client got an answer before its head was complete"
    end
    # Their heads complete: each is served, the oldest first or not.
    @slow.each { |socket| socket.write("1\r\n\r\n") }
    @slow.each { |socket| assert_match(%r{\AHTTP/1.1 200 .*path=/slow\n\z}m, socket.read) }
  end

  def test_a_head_slower_than_read_timeout_gets_408_and_the_worker_serves_on
    start("http read_timeout: 1\n")
    open_slow(5)
    @slow.each { |socket| socket.write("a") } # a byte now and then does not reset the clock
    @slow.each do |socket|
      assert_match(%r{\AHTTP/1.1 408 Request Timeout\r\n.*connection: close\r\n}m, socket.read)
    end
    @server.wait_for(/408 Request Timeout for 127\.0\.0\.1: timed out waiting 1 s for the client/)
    assert_match(%r{\AHTTP/1.1 200 }, @server.get("/"))
  end

  def test_beyond_max_pending_heads_the_oldest_makes_room_with_408
    start("http read_timeout: 30, max_pending_heads: 2\n")
    open_slow(3)
    # The worker takes connections in the order they came: the third one
    # held takes the place of the first.
    assert_match(%r{\AHTTP/1.1 408 }, @slow.first.read)
    @server.wait_for(/408 Request Timeout for 127\.0\.0\.1: 2 connections \(max_pending_heads\) were waiting/)
    assert_match(%r{\AHTTP/1.1 200 }, @server.get("/"))
    @slow.drop(1).each { |socket| assert_equal :wait_readable, socket.read_nonblock(1, exception: false) }
  end

  # Closing a held connection on stop would reset a client whose request
  # is on its way: its head gets STOP_GRACE more seconds, then 408.
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
