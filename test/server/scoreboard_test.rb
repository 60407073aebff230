# frozen_string_literal: true

require "test_helper"
require "herd/server/scoreboard"

class SharedMemoryTest < Herd::Test
  def test_write_int_round_trips_through_the_slot_reader_and_is_seen_by_the_parent
    memory = Herd::SharedMemory.allocate_slots(4)
    skip "no mmap through Fiddle here" unless memory

    [0, 1, 255, 256, 2**40 + 7, -1, -(2**63), 2**63 - 1].each do |value|
      memory.write_int(8, value)
      assert_equal value, memory[1]
    end
    pid = fork { memory.write_int(16, 42) && exit!(0) }
    Process.wait(pid)
    assert_equal 42, memory[2]
    memory.write_ints(8, [7, -8])
    assert_equal [7, -8], [memory[1], memory[2]]
  ensure
    memory&.free
  end
end

class ScoreboardTest < Herd::Test
  def setup
    @board = Herd::Server::Scoreboard.allocate(2)
    skip "no shared memory here" unless @board
  end

  def test_busy_then_idle
    @board.reset(1)
    assert_nil @board.current(1)
    @board.busy(1, "GET", "/orders?page=2")
    elapsed, label = @board.current(1)
    assert_operator elapsed, :>=, 0
    assert_equal "GET /orders?page=2", label
    @board.idle(1, 17)
    assert_nil @board.current(1)
    assert_equal 17, @board.requests(1)
  end

  def test_a_shorter_label_after_a_longer_one_is_read_whole_and_alone
    @board.busy(1, "POST", "/" + "y" * 1000)
    @board.idle(1, 1)
    @board.busy(1, "GET", "/")
    assert_equal "GET /", @board.current(1).last
    @board.idle(1, 2)
    assert_equal 2, @board.requests(1)
    assert_nil @board.current(1)
  end

  def test_a_long_target_is_cut_to_the_slot
    @board.busy(0, "POST", "/" + "x" * 1000)
    _, label = @board.current(0)
    assert_equal Herd::Server::Scoreboard::LABEL_MAX, label.bytesize
    assert label.start_with?("POST /xxx")
  end
end
