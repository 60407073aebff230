# frozen_string_literal: true

require "test_helper"
require "herd/cluster/scoreboard"

# The same tests for both mappings: through herd's C extension
# (SharedMemory::Native) and through Fiddle (the fallback where it is not
# built or HERD_C_EXTENSION=0).
module SharedMemoryBehaviour
  def setup
    skip "herd's C extension is not built (`rake compile`)" if native? && !defined?(Herd::SharedMemory::Native)
    @memory = Herd::SharedMemory.allocate_slots(4, native: native?)
    skip "no mmap here" unless @memory
    assert_equal native?, @memory.native?
  end

  def teardown
    @memory&.free
  end

  def test_write_int_round_trips_through_the_slot_reader_and_is_seen_by_the_parent
    [0, 1, 255, 256, 2**40 + 7, -1, -(2**63), 2**63 - 1].each do |value|
      @memory.write_int(8, value)
      assert_equal value, @memory[1]
      assert_equal value, @memory.read_int(8)
    end
    pid = fork { @memory.write_int(16, 42) && exit!(0) }
    Process.wait(pid)
    assert_equal 42, @memory[2]
    @memory.write_ints(8, [7, -8])
    assert_equal [7, -8], [@memory[1], @memory[2]]
    @memory[3] = 9
    assert_equal 9, @memory.read_int(24)
  end

  def test_raw_bytes_up_to_the_last_one
    assert_equal 32, @memory.size
    @memory.write(0, "a" * 32)
    @memory.write(28, "wxyz")
    assert_equal "a" * 28 + "wxyz", @memory.read(0, 32)
    assert_equal Encoding::BINARY, @memory.read(0, 1).encoding
    assert_equal "", @memory.read(32, 0)
  end

  def test_an_overrun_raises_and_writes_nothing
    before = fill
    {
      "a slot past the end" => -> { @memory[4] = 1 },
      "a negative slot" => -> { @memory[-1] = 1 },
      "an Integer crossing the end" => -> { @memory.write_int(25, 1) },
      "Integers crossing the end" => -> { @memory.write_ints(16, [1, 2, 3]) },
      "a negative offset" => -> { @memory.write_int(-8, 1) },
      "bytes crossing the end" => -> { @memory.write(30, "xyz") },
      "bytes from a negative offset" => -> { @memory.write(-1, "x") },
      "bytes far past the end" => -> { @memory.write(2**40, "x") }
    }.each do |what, write|
      assert_raises(Herd::SharedMemory::OutOfBounds, what) { write.call }
      assert_equal before, @memory.read(0, 32), what
    end
  end

  def test_a_read_outside_raises
    assert_raises(Herd::SharedMemory::OutOfBounds) { @memory[4] }
    assert_raises(Herd::SharedMemory::OutOfBounds) { @memory[-1] }
    assert_raises(Herd::SharedMemory::OutOfBounds) { @memory.read_int(25) }
    assert_raises(Herd::SharedMemory::OutOfBounds) { @memory.read(31, 2) }
    assert_raises(Herd::SharedMemory::OutOfBounds) { @memory.read(0, -1) }
    assert_raises(Herd::SharedMemory::OutOfBounds) { @memory.read(-1, 1) }
  end

  def test_the_error_is_a_herd_error_naming_the_access_and_the_size
    error = assert_raises(Herd::Error) { @memory.write(29, "wxyz") }
    assert_kind_of Herd::SharedMemory::OutOfBounds, error
    assert_includes error.message, "29"
    assert_includes error.message, "32"
  end

  def test_a_value_that_is_not_an_integer_writes_nothing
    before = fill
    assert_raises(TypeError) { @memory.write_ints(0, [1, "2"]) }
    assert_equal before, @memory.read(0, 32)
  end

  def test_every_access_raises_once_freed
    @memory.free
    assert_equal 0, @memory.size
    assert_raises(Herd::SharedMemory::OutOfBounds) { @memory[0] }
    assert_raises(Herd::SharedMemory::OutOfBounds) { @memory[0] = 1 }
    assert_raises(Herd::SharedMemory::OutOfBounds) { @memory.write(0, "x") }
    assert_raises(Herd::SharedMemory::OutOfBounds) { @memory.read(0, 0) }
    @memory.free # twice: nothing more to unmap
  end

  private

  def fill
    bytes = (0...32).map(&:chr).join.b
    @memory.write(0, bytes)
    bytes
  end
end

class SharedMemoryNativeTest < Herd::Test
  include SharedMemoryBehaviour

  def native? = true

  def test_it_cannot_be_copied_into_a_second_owner
    assert_raises(NoMethodError) { @memory.dup }
  end
end

class SharedMemoryFiddleTest < Herd::Test
  include SharedMemoryBehaviour

  def native? = false
end

class SharedMemoryChoiceTest < Herd::Test
  def test_herd_head_scanner_0_maps_through_fiddle
    before = ENV["HERD_C_EXTENSION"]
    ENV["HERD_C_EXTENSION"] = "0"
    memory = Herd::SharedMemory.allocate_slots(1)
    skip "no mmap here" unless memory
    refute memory.native?
  ensure
    memory&.free
    ENV["HERD_C_EXTENSION"] = before
  end

  def test_the_extension_maps_when_it_is_used
    skip "herd's C extension is not used: #{Herd::Extension.unused_reason}" if Herd::Extension.unused_reason
    memory = Herd::SharedMemory.allocate_slots(1)
    assert memory.native?
  ensure
    memory&.free
  end
end

# The scoreboard's Ruby writes, on either mapping; ScoreboardSlotsTest
# covers the C writes.
module ScoreboardBehaviour
  def setup
    skip "herd's C extension is not built (`rake compile`)" if native? && !defined?(Herd::SharedMemory::Native)
    @board = Herd::Cluster::Scoreboard.allocate(2, native: native?)
    skip "no shared memory here" unless @board
  end

  def teardown
    @board&.instance_variable_get(:@memory)&.free
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
    assert_equal Herd::Cluster::Scoreboard::LABEL_MAX, label.bytesize
    assert label.start_with?("POST /xxx")
  end

  def test_a_slot_past_the_last_raises_and_writes_nothing
    @board.busy(1, "GET", "/last")
    @board.idle(1, 5)
    memory = @board.instance_variable_get(:@memory)
    before = memory.read(0, memory.size)
    [-> { @board.busy(2, "GET", "/") }, -> { @board.idle(2, 1) }, -> { @board.reset(2) }, -> { @board.busy(-1, "GET", "/") }].each do |write|
      assert_raises(Herd::SharedMemory::OutOfBounds) { write.call }
    end
    assert_equal before, memory.read(0, memory.size)
    assert_equal 5, @board.requests(1)
    assert_raises(Herd::SharedMemory::OutOfBounds) { @board.current(2) }
  end

  def test_a_worker_forked_afterwards_writes_what_the_monitor_reads
    pid = fork do
      @board.busy(0, "GET", "/child")
      exit!(0)
    end
    Process.wait(pid)
    assert_equal "GET /child", @board.current(0).last
  end
end

class ScoreboardNativeTest < Herd::Test
  include ScoreboardBehaviour

  def native? = true
end

class ScoreboardFiddleTest < Herd::Test
  include ScoreboardBehaviour

  def native? = false
end

# The scoreboard's writes in C (ScoreboardSlots) against Ruby's: the same
# bytes in the slot, read back the same by the monitor's side.
class ScoreboardSlotsTest < Herd::Test
  def setup
    require "herd/http"
    skip "herd's C extension is not built (`rake compile`)" unless defined?(Herd::Cluster::ScoreboardSlots) && defined?(Herd::SharedMemory::Native)
    @ruby = Herd::Cluster::Scoreboard.allocate(2)
    skip "no shared memory here" unless @ruby
    @c = Herd::Cluster::Scoreboard.allocate(2, native: true)
    @c.write_with(Herd::Cluster::ScoreboardSlots)
    assert_same Herd::Cluster::ScoreboardSlots, @c.instance_variable_get(:@c_slots)
  end

  def teardown
    [@ruby, @c].each { |board| board&.instance_variable_get(:@memory)&.free }
  end

  def slot(board, number, from, length)
    board.instance_variable_get(:@memory).read(number * Herd::Cluster::Scoreboard::SLOT_BYTES + from, length)
  end

  def test_they_write_the_same_bytes
    targets = ["/", "/orders?page=2", "/caf\u00e9".b, "/" + "x" * 226, "/" + "x" * 227, "/" + "x" * 228, "/" + "y" * 1000]
    [@ruby, @c].each { |board| board.busy(1, "POST", "/" + "z" * 500) } # a longer label before
    targets.each_with_index do |target, index|
      [@ruby, @c].each { |board| board.busy(1, "GET", target) }
      label_room = Herd::Cluster::Scoreboard::SLOT_BYTES - Herd::Cluster::Scoreboard::LABEL_OFFSET
      assert_equal slot(@ruby, 1, 24, label_room), slot(@c, 1, 24, label_room), target
      assert_equal @ruby.current(1).last, @c.current(1).last
      assert_operator @c.current(1).first, :>=, 0
      [@ruby, @c].each { |board| board.idle(1, index + 7) }
      assert_equal slot(@ruby, 1, 0, 16), slot(@c, 1, 0, 16)
      assert_nil @c.current(1)
      assert_equal index + 7, @c.requests(1)
    end
  end

  def test_a_slot_past_the_last_raises_and_writes_nothing
    memory = @c.instance_variable_get(:@memory)
    @c.busy(1, "GET", "/last")
    @c.idle(1, 3)
    before = memory.read(0, memory.size)
    [2, -1, 2**40, 2**62].each do |number|
      assert_raises(Herd::SharedMemory::OutOfBounds, number.to_s) { @c.busy(number, "GET", "/") }
      assert_raises(Herd::SharedMemory::OutOfBounds, number.to_s) { @c.idle(number, 1) }
    end
    assert_equal before, memory.read(0, memory.size)
  end

  def test_the_c_writes_take_a_mapping_never_an_address
    memory = @c.instance_variable_get(:@memory)
    fiddle = Herd::SharedMemory.allocate_slots(64, native: false)
    [0, 4096, Object.new, fiddle].compact.each do |not_a_mapping|
      assert_raises(TypeError) { Herd::Cluster::ScoreboardSlots.busy(not_a_mapping, 0, "GET", "/") }
      assert_raises(TypeError) { Herd::Cluster::ScoreboardSlots.idle(not_a_mapping, 0, 1) }
    end
    Herd::Cluster::ScoreboardSlots.idle(memory, 1, 4)
    assert_equal 4, @c.requests(1)
  ensure
    fiddle&.free
  end

  def test_a_freed_mapping_raises
    @c.instance_variable_get(:@memory).free
    assert_raises(Herd::SharedMemory::OutOfBounds) { @c.busy(0, "GET", "/") }
    assert_raises(Herd::SharedMemory::OutOfBounds) { @c.idle(0, 1) }
  end

  def test_a_fiddle_mapping_keeps_the_writes_in_ruby
    board = Herd::Cluster::Scoreboard.allocate(1, native: false)
    board.write_with(Herd::Cluster::ScoreboardSlots)
    board.busy(0, "GET", "/fiddle")
    assert_equal "GET /fiddle", board.current(0).last
    board.idle(0, 2)
    assert_equal 2, board.requests(0)
  ensure
    board&.instance_variable_get(:@memory)&.free
  end

  def test_a_layout_it_does_not_write_keeps_the_writes_in_ruby
    other = Object.new
    def other.layout = [512, 8, 24, 488]
    board = Herd::Cluster::Scoreboard.allocate(1)
    board.write_with(other)
    board.busy(0, "GET", "/")
    assert_equal "GET /", board.current(0).last
  ensure
    board&.instance_variable_get(:@memory)&.free
  end
end
