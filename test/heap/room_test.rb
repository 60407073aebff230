# frozen_string_literal: true

require "test_helper"
require "minitest/mock"
require "herd/heap/room_keeper"

# Free slots a template leaves its children (Herd::Heap::Room), and a
# worker's heap given room when it forced a major GC (Herd::Heap::RoomKeeper).
class HeapRoomTest < Herd::Test
  HERD_RATIOS = {"RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO" => "0.10", "RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO" => "0.25"}.freeze

  # Ruby's goal, unless the share past which a GC gives pages back comes first.
  def test_the_room_aims_at_rubys_goal_short_of_its_maximum
    assert_in_delta 0.22, Herd::Heap::Room.target_ratio(0.10, 0.40, 0.25)
    assert_in_delta 0.40, Herd::Heap::Room.target_ratio(0.20, 0.40, 0.65)
    assert_in_delta 0.56, Herd::Heap::Room.target_ratio(0.20, 0.0, 0.65)
  end

  # The class of bug: any heap (one per slot size) packed to little more
  # than Ruby's minimum free starts every child's chain of major GCs, so
  # every heap gets the room, and Ruby is left no pages to add on its own;
  # all together stay short of the share past which a GC gives pages back.
  def test_every_heap_of_a_packed_template_gets_the_room
    unless (reason = Herd::Heap::Room.unsupported).nil?
      made = Herd::Heap::Room.make
      assert_equal [0, reason, nil], [made.slots, made.stepped_aside, made.to_s]
      return
    end
    out, err, status = ruby_run(<<~RUBY, env: HERD_RATIOS)
      require "herd"
      $plain = Array.new(200_000) { Object.new }
      $arrays = Array.new(50_000) { Array.new(8) }
      GC.compact
      def free_ratios
        GC.stat_heap.values.select { |heap| heap[:heap_eden_slots] >= 10_000 }.map do |heap|
          (heap[:heap_eden_slots] - heap[:total_allocated_objects] + heap[:total_freed_objects]).fdiv(heap[:heap_eden_slots]).round(2)
        end
      end
      before = free_ratios
      made = Herd::Heap::Room.make
      after = free_ratios
      p [before, after, GC.stat(:heap_allocatable_slots), made.slots.positive?, made.gc_runs, Herd::Heap::Room.make.slots,
         GC.stat(:heap_free_slots).fdiv(GC.stat(:heap_available_slots)).round(2)]
      puts made
    RUBY
    assert status.success?, err
    first, line = out.lines
    before, after, allocatable, added, runs, again, whole = eval(first) # standard:disable Security/Eval
    assert_operator before.size, :>=, 2, "the plain objects' heap and the arrays' heap: #{before}"
    before.each { |ratio| assert_operator ratio, :<, 0.2, "compacted: #{before}" }
    after.each { |ratio| assert_in_delta 0.22, ratio, 0.02, "every heap: #{after}" }
    assert_equal [0, true, 1, 0], [allocatable, added, runs, again]
    assert_operator whole, :<=, 0.23, "all the heaps together, the small ones' free slots counted"
    assert_match(/room for the children: \d+ free slots added \(2\d% of the heap free, Ruby's minimum 10%\)/, line)
  end

  def test_prepare_gives_the_room_unless_told_not_to_or_filling
    reason = Herd::Heap::Room.unsupported
    report = Herd::Heap.prepare(process_warmup: false, room: false)
    assert_nil report.room
    assert_nil Herd::Heap.prepare(process_warmup: false, fill_free_slots: true).tap(&:release).room
    room = Herd::Heap.prepare(process_warmup: false).room
    reason ? assert_equal(reason, room.stepped_aside) : assert_nil(room.stepped_aside)
  end

  # In a worker: the heap that forced the major GC grows towards Ruby's
  # goal, but the whole stays short of where a GC would give the pages back.
  def test_growing_one_heap_stays_under_rubys_maximum
    return assert_equal(Herd::Heap::Room.unsupported, Herd::Heap::Room.grow([1]).stepped_aside) if Herd::Heap::Room.unsupported

    out, err, status = ruby_run(<<~RUBY, env: HERD_RATIOS)
      require "herd"
      $plain = Array.new(200_000) { Object.new }
      $arrays = Array.new(50_000) { Array.new(8) }
      GC.compact
      arrays = GC.stat_heap(1, :heap_eden_slots)
      made = Herd::Heap::Room.grow([1])
      GC.start(full_mark: false, immediate_sweep: true)
      p [GC.stat_heap(1, :heap_eden_slots) > arrays, made.slots.positive?,
         GC.stat(:heap_free_slots).fdiv(GC.stat(:heap_available_slots)).round(2)]
    RUBY
    assert status.success?, err
    grew, added, free = eval(out) # standard:disable Security/Eval
    assert_equal [true, true], [grew, added]
    assert_operator free, :<=, 0.23
  end

  def test_a_keeper_grows_only_the_heaps_that_forced_a_major_gc
    return assert_nil(Herd::Heap::RoomKeeper.start) if Herd::Heap::Room.unsupported

    counts = [3, 0, 1]
    heaps = -> { counts.each_with_index.to_h { |count, index| [index, {force_major_gc_count: count, slot_size: 40 << index}] } }
    stat_heap = ->(index = nil, key = nil) { index ? heaps.call[index][key] : heaps.call }
    grown = []
    grow = ->(indexes) {
      grown << indexes
      Herd::Heap::Room::Made.new(slots: 500, gc_runs: 1)
    }
    GC.stub(:stat_heap, stat_heap) do
      Herd::Heap::Room.stub(:grow, grow) do
        keeper = Herd::Heap::RoomKeeper.start
        assert_nil keeper.check(100.0)
        counts[2] += 1
        assert_nil keeper.check(100.5), "once a second at most"
        assert_match(/500 free slots added to the heap of 160-byte slots: a major GC started because it had too few free/,
          keeper.check(101.0))
        assert_nil keeper.check(102.0)
        assert_equal [[2]], grown
        assert_equal 500, keeper.added
      end
    end
  end
end
