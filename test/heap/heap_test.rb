# frozen_string_literal: true

require "test_helper"

class HeapTest < Herd::Test
  def test_prepare_ages_young_objects_to_old
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      GC.disable # allocate without GC so that the objects stay young
      $keep = Array.new(200_000) { |i| [i] }
      GC.enable
      report = Herd::Heap.prepare(process_warmup: false)
      again = Herd::Heap.prepare(process_warmup: false)
      p [report.strategy, report.gc_runs, report.young_before, report.young_after, report.old_after > report.old_before,
         again.strategy, again.gc_runs]
    RUBY
    assert status.success?, err
    strategy, runs, young_before, young_after, old_grew, again_strategy, again_runs = eval(out) # standard:disable Security/Eval
    assert_equal :aging, strategy
    assert_operator runs, :>=, 1
    assert_operator young_before, :>, 200_000
    assert_operator young_after, :<, young_before / 50
    assert old_grew
    assert_equal :none, again_strategy, "an already-old heap needs no GC"
    assert_equal 0, again_runs
  end

  # A heap big enough that aging it crosses Ruby's old-object limit:
  # the next allocation starts a major GC, marked incrementally on Ruby >=
  # 3.3. The preparation finishes it: its count of old objects is true, and
  # no child is forked into a GC under way.
  def test_prepare_finishes_a_gc_that_ruby_started_meanwhile
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      GC.disable
      $keep = Array.new(300_000) { |i| {a: i, b: "s\#{i}", c: [i]} }
      GC.enable
      report = Herd::Heap.prepare(process_warmup: false)
      p [report.young_before, report.young_after, GC.latest_gc_info(:state)]
    RUBY
    assert status.success?, err
    young_before, young_after, state = eval(out) # standard:disable Security/Eval
    assert_operator young_after, :<, young_before / 50, "the aging went through"
    assert_equal :none, state, "no GC under way when prepare returns"
  end

  def test_options_lists_every_keyword_of_prepare
    assert_equal Herd::Heap.method(:prepare).parameters.map(&:last).sort, Herd::Heap::OPTIONS.sort
  end

  # The cap bounds the aging GCs; a GC Ruby already started is still
  # finished (finish_gc_under_way), so none may be under way here. (The
  # room for the children frees its fillers with a GC of its own.)
  def test_prepare_respects_the_gc_run_cap
    GC.start
    report = Herd::Heap.prepare(process_warmup: false, max_gc_runs: 0, room: false)
    assert_equal 0, report.gc_runs
  end

  def test_prepare_leaves_a_disabled_gc_disabled
    GC.disable
    Herd::Heap.prepare(process_warmup: false)
    assert GC.disable, "GC should still be disabled"
  ensure
    GC.enable
  end

  def test_compaction_is_optional_and_reported
    skip "GC.compact not available on this Ruby" unless Herd::Heap.compaction_supported?
    assert Herd::Heap.prepare(process_warmup: false, compact: true).compacted
    refute Herd::Heap.prepare(process_warmup: false).compacted
  end

  # `compact: :auto` compacts a heap that never was, then not again until
  # its live objects grew by Heap::LastCompaction::GROWTH; a forked child
  # inherits the record, as a mold promoted from a worker does.
  def test_auto_compaction_compacts_once_then_when_the_heap_grew
    skip "GC.compact not available on this Ruby" unless Herd::Heap.compaction_supported?
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      first = Herd::Heap.prepare(process_warmup: false, compact: :auto)
      again = Herd::Heap.prepare(process_warmup: false, compact: :auto)
      reader, writer = IO.pipe
      child = fork do
        writer.write(Marshal.dump([Herd::Heap.prepare(process_warmup: false, compact: :auto).compacted,
          Herd::Heap.prepare(process_warmup: false, compact: true).compacted]))
        exit!(0)
      end
      writer.close
      in_child = Marshal.load(reader.read)
      Process.wait(child)
      $grown = Array.new(GC.stat(:heap_live_slots) / 5) { |i| [i] }
      grown = Herd::Heap.prepare(process_warmup: false, compact: :auto)
      p [first.compacted, first.compaction_skipped, again.compacted, again.to_s, in_child, grown.compacted]
    RUBY
    assert status.success?, err
    first, first_skipped, again, again_line, in_child, grown = eval(out) # standard:disable Security/Eval
    assert first, "a heap never compacted compacts"
    assert_nil first_skipped
    refute again, "right after a compaction there is nothing to gather"
    assert_match(/, compaction not needed \(\+\d+\.\d% live objects since the last, 10% or more compacts\), young/, again_line)
    assert_equal [false, true], in_child, "a child inherits the record; compact: true compacts regardless"
    assert grown, "compacts again once the live objects grew"
  end

  def test_compact_takes_true_false_or_auto
    error = assert_raises(ArgumentError) { Herd::Heap.prepare(process_warmup: false, compact: :always) }
    assert_equal "compact: must be true, false or :auto, got :always", error.message
    refute Herd::Heap.prepare(process_warmup: false, compact: nil).compacted, "nil is false, as it always was"
  end

  # Process.warmup as Ruby >= 3.3 has it (a GC and a compaction), counted in
  # $warmups: stubbed, since this Ruby may lack it.
  COUNTED_WARMUP = <<~RUBY
    require "herd"
    $warmups = 0
    def Process.warmup = ($warmups += 1; GC.start; GC.compact)
  RUBY

  # Where Process.warmup exists (Ruby >= 3.3) it compacts: `:auto` calls it
  # only when compacting is due.
  def test_auto_compaction_calls_process_warmup_only_when_due
    skip "GC.compact not available on this Ruby" unless Herd::Heap.compaction_supported?
    out, err, status = ruby_run(<<~RUBY)
      #{COUNTED_WARMUP}
      GC.disable
      $young = Array.new(100_000) { |i| [i] }
      GC.enable
      first = Herd::Heap.prepare(compact: :auto)
      $more = Array.new(1_000) { |i| [i] }
      again = Herd::Heap.prepare(compact: :auto, max_gc_runs: 1, young_ratio: 0.0)
      p [first.strategy, first.compacted, again.strategy, again.compacted, again.compaction_skipped.to_s.start_with?("compaction not needed"), $warmups]
    RUBY
    assert status.success?, err
    assert_equal [:process_warmup, true, :aging, false, true, 1], eval(out) # standard:disable Security/Eval
  end

  # A worker promoted to mold holds the garbage of its last jobs: counted
  # before a GC, it would look like growth and compact every refork.
  def test_auto_compaction_does_not_count_garbage_as_growth
    skip "GC.compact not available on this Ruby" unless Herd::Heap.compaction_supported?
    out, err, status = ruby_run(<<~RUBY)
      #{COUNTED_WARMUP}
      first = Herd::Heap.prepare(compact: :auto)
      GC.disable
      Array.new(GC.stat(:heap_live_slots) / 2) { |i| [i] }
      garbage = Herd::Heap::LastCompaction.growth
      GC.enable
      again = Herd::Heap.prepare(compact: :auto)
      p [first.compacted, garbage > Herd::Heap::LastCompaction::GROWTH, again.compacted,
        again.compaction_skipped.to_s.start_with?("compaction not needed"), again.gc_runs.positive?, $warmups]
    RUBY
    assert status.success?, err
    assert_equal [true, true, false, true, true, 1], eval(out) # standard:disable Security/Eval
  end

  def test_report_reads_as_one_log_line
    line = Herd::Heap.prepare(process_warmup: false).to_s
    assert_match(/\Aheap prepared \((none|aging)\): \d+ GC runs?( \+ a major GC \(.+\))?, young \d+ -> \d+, old \d+ -> \d+(; .+)?, [\d.]+ ms\z/, line)
  end

  def test_census_counts_live_old_and_young
    counts = Herd::Heap.census
    assert_equal %i[live old young], counts.keys.sort
    assert_operator counts[:live], :>=, counts[:old]
  end

  # The point of it all: after herd's fork, a GC in the child dirties far
  # fewer pages than after a plain fork.
  def test_a_gc_in_the_child_copies_far_less_after_herds_fork
    out, err, status = ruby_run(<<~RUBY)
      require "herd/fork"
      require "herd/memory"
      GC.disable # as in a program that just loaded: many objects, still young
      $keep = Array.new(1_000_000) { |i| [i, i.to_s] }
      GC.enable
      def dirtied_by_child_gc(**options)
        reader, writer = IO.pipe
        pid = fork(**options) do
          GC.start
          writer.write(Herd::Memory.sample.private_dirty.to_s)
          exit!(0)
        end
        writer.close
        reader.read.to_i
      ensure
        Process.wait(pid)
      end
      plain = dirtied_by_child_gc(prepare_heap: false)
      herd = dirtied_by_child_gc
      puts "\#{plain} \#{herd}"
    RUBY
    assert status.success?, err
    plain, herd = out.split.map(&:to_i)
    assert_operator plain, :>, 20 * 1024 * 1024, "a plain fork's child should copy tens of MB (got #{plain})"
    assert_operator herd * 4, :<, plain, "herd's child dirtied #{herd} bytes vs #{plain} after a plain fork"
  end

  def test_fill_free_slots_fills_the_scattered_free_slots_and_keeps_the_fillers_alive
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      # Young, so that the preparation's first (minor) GC frees every fifth
      # one: 40,000 free slots scattered through full pages.
      GC.disable
      junk = Array.new(200_000) { |i| "s\#{i}" }
      junk.each_index { |i| junk[i] = nil if i % 5 == 0 }
      GC.enable
      # Promoted with GCs: Process.warmup (process_warmup: true on Ruby >= 3.3)
      # compacts, which leaves no scattered free slot to fill.
      report = Herd::Heap.prepare(fill_free_slots: true, process_warmup: false)
      free_after = Herd::Heap.object_heap_free_slots
      GC.start
      puts [report.filled, report.spared, free_after, Herd::Heap.object_heap_free_slots].join(" ")
    RUBY
    assert status.success?, err
    filled, spared, free_after, free_after_gc = out.split.map(&:to_i)
    assert_operator filled, :>=, 40_000, "the scattered free slots should be filled"
    # Only the slots of mostly free memory pages, and a margin, stay free.
    assert_operator free_after, :<, spared + filled / 10, "the free slots should be filled"
    assert_operator free_after_gc, :<, spared + filled / 10, "the report keeps the fillers alive"
  end

  def test_fill_free_slots_leaves_mostly_free_pages_free
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      kept = Array.new(100_000) { |i| "kept \#{i}" }
      gone = Array.new(60_000) { Object.new } # whole pages, free after the GC
      gone = nil
      GC.start
      report = Herd::Heap.prepare(process_warmup: false, fill_free_slots: true)
      puts [report.filled, report.spared, kept.size, gone.inspect].join(" ")
    RUBY
    assert status.success?, err
    filled, spared = out.split.map(&:to_i)
    assert_operator spared, :>, 20_000, "the freed pages' slots should stay free (#{filled} filled)"
  end
end
