# frozen_string_literal: true

require "test_helper"
require "herd/pool/channel"

class PoolChannelTest < Herd::Test
  def setup
    @parent, @child = Herd::Pool::Channel.pair
  end

  def teardown
    [@parent, @child].each(&:close)
  end

  def test_messages_of_any_size_cross_whole_and_in_order
    big = "x" * (3 * Herd::Pool::Channel::READ_SIZE + 17)
    writer = Thread.new { [1, big, {done: true}].each { |message| @child.send_message(message) } }
    received = Array.new(3) { @parent.receive }
    writer.join
    assert_equal [1, big, {done: true}], received
  end

  def test_read_ready_returns_what_came_and_reports_the_peers_close
    @child.send_message(:a)
    @child.send_message(:b)
    @child.close
    messages = []
    closed = false
    until closed
      IO.select([@parent.io], nil, nil, 5)
      batch, closed = @parent.read_ready
      messages.concat(batch)
    end
    assert_equal %i[a b], messages
  end

  # A pool's event loop reads after every wake-up: a read must not leave a
  # 64 KiB string behind each time (read_nonblock makes one per call without
  # a buffer of its own, even when nothing came).
  def test_reading_leaves_no_buffer_behind
    @parent.read_ready # this thread's read buffer, made once
    GC.disable
    before = GC.stat(:malloc_increase_bytes)
    100.times do
      @child.send_message(:ping)
      IO.select([@parent.io], nil, nil, 5)
      assert_equal [[:ping], false], @parent.read_ready
      assert_equal [[], false], @parent.read_ready
    end
    assert_operator GC.stat(:malloc_increase_bytes) - before, :<, Herd::Pool::Channel::READ_SIZE
  ensure
    GC.enable
  end
end
