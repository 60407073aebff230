# frozen_string_literal: true

require "test_helper"
require "support/slow_clients"

# Slow clients (slowloris) without a proxy in front: a worker holds the
# connections whose head is still arriving and serves the clients that are
# ready meanwhile; a head that takes longer than read_timeout gets 408.
class SlowClientsTest < Herd::Test
  include Herd::SlowClients

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
    @slow.drop(1).each { |socket| assert_equal :wait_readable, socket.read_nonblock(1, exception: false) }
    # Checked before this request: the worker may accept it before its
    # head arrives, and then it is a third held connection that makes room.
    assert_match(%r{\AHTTP/1.1 200 }, @server.get("/"))
  end
end
