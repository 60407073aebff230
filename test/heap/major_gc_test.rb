# frozen_string_literal: true

require "test_helper"

# A major GC that every child of a process would start soon after its fork
# runs once in the process before it forks (Herd::Heap::MajorGC).
class MajorGCTest < Herd::Test
  MIB = 1024 * 1024

  def due(stat, pending: nil, env: {})
    Herd::Heap::MajorGC.due(stat, pending: pending, env: env)
  end

  def fresh
    {oldmalloc_increase_bytes: 0, oldmalloc_increase_bytes_limit: 16 * MIB, old_objects: 100_000,
     old_objects_limit: 200_000, remembered_wb_unprotected_objects: 100, remembered_wb_unprotected_objects_limit: 200}
  end

  def test_a_heap_just_after_a_major_gc_needs_none
    assert_nil due(fresh)
  end

  def test_a_major_gc_ruby_decided_on_is_due
    assert_match(/next GC is a major one \(oldgen\)/, due(fresh, pending: :oldgen))
  end

  def test_half_the_old_objects_malloc_budget_spent_is_due
    assert_nil due(fresh.merge(oldmalloc_increase_bytes: 7 * MIB))
    assert_match(/56% of the budget for malloc'd by old objects/, due(fresh.merge(oldmalloc_increase_bytes: 9 * MIB)))
  end

  # The limit is twice the count the last major GC left: spent counts from there.
  def test_old_objects_count_from_what_the_last_major_gc_left
    assert_nil due(fresh.merge(old_objects: 140_000))
    assert_match(/60% of the budget for old objects spent/, due(fresh.merge(old_objects: 160_000)))
    assert_match(/without write barrier/, due(fresh.merge(remembered_wb_unprotected_objects: 180)))
  end

  def test_the_limit_factor_comes_from_rubys_variable
    stat = fresh.merge(old_objects: 160_000) # base 50,000 with a factor of 4: 73% spent
    assert_match(/73% of the budget for old objects/, due(stat, env: {"RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR" => "4"}))
    assert_match(/60%/, due(stat, env: {"RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR" => "nonsense"}))
  end

  def test_missing_or_zero_counters_are_left_out
    assert_nil due({})
    assert_nil due({oldmalloc_increase_bytes: 5, oldmalloc_increase_bytes_limit: 0})
  end

  # The class of bug: a template whose budget for a major GC is mostly
  # spent (here, what it malloc'd since its last one) hands that budget to
  # every child, which spends the rest at once. Prepared, a child's GCs
  # stay minor for a while; not prepared for it, one of its first is major.
  def test_a_childs_first_gcs_are_not_a_major_gc_due_in_its_parent
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      # Strings, kept, that malloc this share of the budget (frees count
      # back, so garbage would not do).
      def malloc(share)
        GC.disable
        ($keep ||= []) << Array.new((GC.stat(:oldmalloc_increase_bytes_limit) * share / 10_240).to_i) { "x" * 10_240 }
        GC.enable
      end
      def major_in_child?
        reader, writer = IO.pipe
        pid = fork do
          majors = GC.stat(:major_gc_count)
          malloc(0.5)
          2.times { GC.start(full_mark: false, immediate_sweep: true) }
          writer.write((GC.stat(:major_gc_count) > majors).to_s)
          exit!(0)
        end
        writer.close
        reader.read
      ensure
        Process.wait(pid)
      end
      results = [false, true].map do |when_due|
        GC.start
        malloc(0.6)
        # Without the room's GC, which runs a major GC when Ruby has one pending
        # (a small heap short of free slots) and so would reset the budget too.
        report = Herd::Heap.prepare(process_warmup: false, major_gc_when_due: when_due, room: false)
        [report.major_gc.nil?, major_in_child?]
      end
      p results
    RUBY
    assert status.success?, err
    assert_equal [[true, "true"], [false, "false"]], eval(out) # standard:disable Security/Eval
  end

  def test_major_gc_first_runs_one_whatever_the_counters
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      GC.start
      majors = GC.stat(:major_gc_count)
      report = Herd::Heap.prepare(process_warmup: false, major_gc_first: true)
      p [GC.stat(:major_gc_count) - majors, report.major_gc, report.gc_runs >= 1, report.strategy]
      puts report.to_s
    RUBY
    assert status.success?, err
    first, line = out.lines
    assert_equal [1, Herd::Heap::MAJOR_GC_FIRST, true, :aging], eval(first) # standard:disable Security/Eval
    assert_match(/\+ a major GC first \(major_gc_first\)/, line)
  end

  # A compaction runs a major GC itself: none is added before it.
  def test_major_gc_first_is_left_out_when_the_preparation_compacts
    skip "GC.compact not available on this Ruby" unless Herd::Heap.compaction_supported?
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      report = Herd::Heap.prepare(compact: :auto, major_gc_first: true)
      p [report.compacted, report.major_gc]
    RUBY
    assert status.success?, err
    assert_equal [true, nil], eval(out) # standard:disable Security/Eval
  end

  def test_the_report_says_why_a_major_gc_ran
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      GC.start
      GC.disable
      $keep = Array.new((GC.stat(:oldmalloc_increase_bytes_limit) * 0.6 / 10_240).to_i) { "x" * 10_240 }
      GC.enable
      report = Herd::Heap.prepare(process_warmup: false)
      puts report.to_s
    RUBY
    assert status.success?, err
    assert_match(/\Aheap prepared \((aging|none)\): \d+ GC runs? \+ a major GC \(.+: every child would soon have run one\)/, out)
  end
end
