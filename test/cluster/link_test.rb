# frozen_string_literal: true

require "test_helper"
require "herd/cluster/link"

class LinkTest < Herd::Test
  def setup
    @monitor_end, @child_end = Herd::Cluster::Link.pair
  end

  def teardown
    [@monitor_end, @child_end].each(&:close)
  end

  def test_messages_and_an_io_cross_the_link
    reader, writer = IO.pipe
    assert @child_end.send_message([:hello, 42])
    assert @child_end.send_message([:spawn_worker, 1, 2], io: reader)
    messages, closed = @monitor_end.read_ready
    assert_equal [[:hello, 42], [:spawn_worker, 1, 2]], messages
    refute closed
    received = @monitor_end.take_io
    writer.write("x")
    assert_equal "x", received.read(1)
  ensure
    [reader, writer, received].compact.each(&:close)
  end

  # A peer that closes with our message unread still gets its last word
  # through (Linux reports ECONNRESET once, then delivers the queue).
  def test_a_peer_that_closes_without_reading_is_still_heard
    assert @monitor_end.send_message([:stop])
    assert @child_end.send_message([:promotion_refused, "opened a gRPC channel"])
    @child_end.close
    assert_equal [[[:promotion_refused, "opened a gRPC channel"]], true], @monitor_end.read_ready
  end

  def test_a_closed_peer_is_reported
    @child_end.send_message([:bye])
    @child_end.close
    assert_equal [[[:bye]], true], @monitor_end.read_ready
  end

  # A worker looks at its link ten times a second under load: an empty link
  # must cost no buffer (recvmsg would allocate 68 KiB each time, garbage
  # that stays in the worker's memory until its next GC).
  def test_looking_at_an_empty_link_allocates_no_buffer
    GC.disable
    before = GC.stat(:malloc_increase_bytes)
    100.times { assert_equal [[], false], @monitor_end.read_ready }
    assert_operator GC.stat(:malloc_increase_bytes) - before, :<, Herd::Cluster::Link::MAX_PACKET
  ensure
    GC.enable
  end
end
