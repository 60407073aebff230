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

# The scoreboard's writes in C (ScoreboardSlots) against Ruby's: the same
# bytes in the slot, read back the same by the monitor's side.
class ScoreboardSlotsTest < Herd::Test
  def setup
    require "herd/http"
    skip "herd's C extension is not built (`rake compile`)" unless defined?(Herd::Server::ScoreboardSlots)
    @ruby = Herd::Server::Scoreboard.allocate(2)
    skip "no shared memory here" unless @ruby
    @c = Herd::Server::Scoreboard.allocate(2)
    @c.write_with(Herd::Server::ScoreboardSlots)
  end

  def teardown
    [@ruby, @c].each { |board| board&.instance_variable_get(:@memory)&.free }
  end

  def slot(board, number, from, length)
    board.instance_variable_get(:@memory).read(number * Herd::Server::Scoreboard::SLOT_BYTES + from, length)
  end

  def test_they_write_the_same_bytes
    targets = ["/", "/orders?page=2", "/caf\u00e9".b, "/" + "x" * 226, "/" + "x" * 227, "/" + "x" * 228, "/" + "y" * 1000]
    [@ruby, @c].each { |board| board.busy(1, "POST", "/" + "z" * 500) } # a longer label before
    targets.each_with_index do |target, index|
      [@ruby, @c].each { |board| board.busy(1, "GET", target) }
      label_room = Herd::Server::Scoreboard::SLOT_BYTES - Herd::Server::Scoreboard::LABEL_OFFSET
      assert_equal slot(@ruby, 1, 24, label_room), slot(@c, 1, 24, label_room), target
      assert_equal @ruby.current(1).last, @c.current(1).last
      assert_operator @c.current(1).first, :>=, 0
      [@ruby, @c].each { |board| board.idle(1, index + 7) }
      assert_equal slot(@ruby, 1, 0, 16), slot(@c, 1, 0, 16)
      assert_nil @c.current(1)
      assert_equal index + 7, @c.requests(1)
    end
  end

  def test_a_layout_it_does_not_write_keeps_the_writes_in_ruby
    other = Object.new
    def other.layout = [512, 8, 24, 488]
    board = Herd::Server::Scoreboard.allocate(1)
    board.write_with(other)
    board.busy(0, "GET", "/")
    assert_equal "GET /", board.current(0).last
  ensure
    board&.instance_variable_get(:@memory)&.free
  end
end
