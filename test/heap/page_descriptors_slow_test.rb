# frozen_string_literal: true

require "test_helper"
require "support/grown_heap"

# `rake test:slow`: the GC's own checks and work over a packed heap of
# hundreds of thousands of objects, in the parent and in a forked child.
class PageDescriptorsSlowTest < Herd::Test
  include Herd::GrownHeap

  # Only where packing runs (Ruby 3.1 with glibc); elsewhere
  # PageDescriptorsTest shows it stepping aside.
  if SUPPORTED
    def test_the_gc_works_on_after_packing
      out, err, status = ruby_run(GROW + <<~RUBY)
        raise "not packed" unless Herd::Heap::PageDescriptors.pack.packed?
        counted = ObjectSpace.each_object(String).count
        GC.start
        GC.compact
        GC.verify_compaction_references(double_heap: true, toward: :empty)
        grown = GC.stat(:heap_allocated_pages)
        $keep = nil
        4.times { Array.new(200_000) { |i| [i, i.to_s] }; GC.start }
        shrunk = GC.stat(:heap_allocated_pages)
        pid = fork { GC.start; Array.new(100_000) { Object.new }; GC.start; exit!(0) }
        Process.wait(pid)
        # 3.1's 16 KiB pages hold 408 or 409 slots each, depending on alignment.
        pages = GC.stat(:heap_allocated_pages)
        slots = ObjectSpace.count_objects[:TOTAL]
        p [counted >= 300_000, shrunk < grown, $?.success?, [pages, slots, GC.stat(:heap_available_slots)]]
      RUBY
      assert status.success?, err
      counted, shrunk, child_ok, (pages, slots, available) = eval(out) # standard:disable Security/Eval
      assert counted
      assert shrunk, "Ruby frees pages (and their moved descriptors) as before"
      assert child_ok
      assert_equal available, slots, "ObjectSpace walks every slot the GC counts"
      assert_includes (pages * 408)..(pages * 409), slots, "#{pages} pages hold #{slots} slots"
    end

    # Ruby's own check of its heap (every page, every slot, the remembered
    # set, the counters) after packing, after a GC, and in a forked child.
    def test_the_heap_passes_gc_verify_internal_consistency_after_packing
      out, err, status = ruby_run(GROW + <<~RUBY)
        raise "not packed" unless Herd::Heap::PageDescriptors.pack.packed?
        GC.verify_internal_consistency
        pid = fork do
          GC.verify_internal_consistency
          Array.new(100_000) { |i| [i.to_s] }
          GC.start(full_mark: false)
          GC.verify_internal_consistency
          GC.start
          GC.verify_internal_consistency
          exit!(0)
        end
        Process.wait(pid)
        child_ok = $?.success?
        $keep = $keep.first(1000)
        GC.start
        GC.verify_internal_consistency
        p [child_ok, :verified]
      RUBY
      assert status.success?, err
      assert_equal [true, :verified], eval(out) # standard:disable Security/Eval
    end
  end
end
