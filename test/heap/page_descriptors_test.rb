# frozen_string_literal: true

require "test_helper"
require "support/grown_heap"

class PageDescriptorsTest < Herd::Test
  include Herd::GrownHeap

  # Where the layout is not Ruby 3.1's (Ruby >= 3.2's 64 KiB pages, another
  # malloc), the tests below give way to the one that shows herd stepping aside.
  if SUPPORTED
    def test_pack_puts_descriptors_together_and_a_forks_first_gc_copies_less
      out, err, status = ruby_run(GROW + <<~RUBY)
        spread_before = spread.call
        copied_before = first_gc.call
        packed = Herd::Heap::PageDescriptors.pack
        p [packed.packed?, packed.moved, packed.descriptors, packed.pages_before, packed.pages_after,
           spread_before, spread.call, copied_before, first_gc.call, packed.to_s]
      RUBY
      assert status.success?, err
      packed, moved, descriptors, pages_before, pages_after, seen_before, seen_after, copied_before, copied_after, line = eval(out) # standard:disable Security/Eval
      assert packed, line
      assert_operator moved, :>=, descriptors * 0.9, "only the pages in use stay"
      assert_operator pages_after, :<, pages_before / 4
      assert_operator seen_after, :<, seen_before / 4, "the object pages point at the new descriptors"
      assert_operator copied_after, :<, copied_before / 2, "a fork's first GC copied #{copied_after} KiB, #{copied_before} before"
      assert_match(/\A\d+ GC page descriptors packed: \d+ -> \d+ pages of memory, [\d.]+ ms\z/, line)
    end

    def test_packing_twice_leaves_packed_descriptors_alone
      out, err, status = ruby_run(GROW + <<~RUBY)
        Herd::Heap::PageDescriptors.pack
        again = Herd::Heap::PageDescriptors.pack
        p [again.packed?, again.skipped]
      RUBY
      assert status.success?, err
      packed, reason = eval(out) # standard:disable Security/Eval
      refute packed
      assert_match(/already packed/, reason)
    end

    def test_nothing_moves_while_other_threads_run
      out, err, status = ruby_run(<<~RUBY)
        require "herd"
        thread = Thread.new { sleep }
        packed = Herd::Heap::PageDescriptors.pack
        thread.kill
        p [packed.packed?, packed.to_s]
      RUBY
      assert status.success?, err
      packed, line = eval(out) # standard:disable Security/Eval
      refute packed
      assert_equal "GC page descriptors left in place: 1 other thread alive", line
    end

    def test_a_plan_that_outgrows_the_pages_kept_writes_nothing
      out, err, status = ruby_run(GROW + <<~RUBY)
        Herd::Heap::PageDescriptors::Relocation.send(:remove_const, :ALLOCATION_BUDGET)
        Herd::Heap::PageDescriptors::Relocation.const_set(:ALLOCATION_BUDGET, 0)
        before = spread.call
        packed = Herd::Heap::PageDescriptors.pack
        after = spread.call
        GC.start
        GC.compact
        p [packed.packed?, packed.skipped, after > before / 2]
      RUBY
      assert status.success?, err
      packed, reason, unchanged = eval(out) # standard:disable Security/Eval
      refute packed
      assert_match(/took more than the pages kept/, reason)
      assert unchanged, "the descriptors stayed where they were"
    end

    def test_heap_prepare_packs_before_sealing
      out, err, status = ruby_run(GROW + <<~RUBY)
        $young = Array.new(100_000) { [] }
        report = Herd::Heap.prepare(process_warmup: false, seal_malloc: true)
        plain = Herd::Heap.prepare(process_warmup: false, max_gc_runs: 1, pack_descriptors: false)
        p [report.packed&.packed?, report.to_s, plain.packed]
      RUBY
      assert status.success?, err
      packed, line, plain = eval(out) # standard:disable Security/Eval
      assert packed, line
      assert_match(/GC page descriptors packed: .*; \d+ malloc free chunks sealed/, line)
      assert_nil plain
    end
  else
    def test_packing_steps_aside_and_the_heap_report_says_why
      out, err, status = ruby_run(<<~RUBY)
        require "herd"
        GC.disable # young for sure, so that the preparation has work to do
        $young = Array.new(100_000) { [] }
        GC.enable
        packed = Herd::Heap::PageDescriptors.pack
        p [packed.packed?, packed.skipped, Herd::Heap.prepare(process_warmup: false).to_s]
      RUBY
      assert status.success?, err
      packed, reason, line = eval(out) # standard:disable Security/Eval
      refute packed
      assert_equal Herd::Heap::PageDescriptors.unsupported, reason
      assert_includes line, "GC page descriptors left in place: #{reason}"
    end
  end

  def test_report_says_why_nothing_moved
    report = Herd::Heap::PageDescriptors::Packed.new(descriptors: 0, moved: 0, pages_before: 0, pages_after: 0, skipped: "2 other threads alive", duration: 0.001)
    refute report.packed?
    assert_equal "GC page descriptors left in place: 2 other threads alive", report.to_s
  end
end
