# frozen_string_literal: true

require "test_helper"

class PageDescriptorsTest < Herd::Test
  SUPPORTED = Herd::PageDescriptors.unsupported.nil?

  # A Ruby of its own, without Bundler: the heap these tests measure is the
  # script's, not whatever the test command's bundle loads (with the bench
  # group configured, bundler/setup alone moved the first GC's copy from
  # 1.6 to 5-7 MiB and the halving failed).
  def ruby_run(code, *args, env: {}, **options)
    super(code, *args, env: {"RUBYOPT" => nil, "BUNDLE_GEMFILE" => nil}.merge(env), **options)
  end

  # A heap grown the way an app's grows: object pages added one at a time
  # between mallocs (strings longer than a slot), so that each page's
  # descriptor lands apart from the others.
  GROW = <<~RUBY
    require "herd"
    $keep = Array.new(300_000) { |i| "a string longer than one slot can hold, number \#{i}" }
    GC.start
    spread = lambda do
      descriptors = ObjectSpace.each_object(String).map { |s| Fiddle::Pointer.new(Fiddle.dlwrap(s) & -16384)[0, 8].unpack1("J") }.uniq
      descriptors.map { |d| d / 4096 }.uniq.size
    end
    private_dirty = -> { File.read("/proc/self/smaps_rollup")[/^Private_Dirty:\\s+(\\d+)/, 1].to_i }
    first_gc = lambda do
      reader, writer = IO.pipe
      pid = fork do
        before = private_dirty.call
        GC.start(full_mark: false, immediate_sweep: true)
        writer.write(private_dirty.call - before)
        exit!(0)
      end
      writer.close
      Process.wait(pid)
      Integer(reader.read)
    end
  RUBY

  def test_pack_puts_descriptors_together_and_a_forks_first_gc_copies_less
    skip "needs CRuby 3.1 with glibc: #{Herd::PageDescriptors.unsupported}" unless SUPPORTED
    out, err, status = ruby_run(GROW + <<~RUBY)
      spread_before = spread.call
      copied_before = first_gc.call
      packed = Herd::PageDescriptors.pack
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

  def test_the_gc_works_on_after_packing
    skip "needs CRuby 3.1 with glibc" unless SUPPORTED
    out, err, status = ruby_run(GROW + <<~RUBY)
      raise "not packed" unless Herd::PageDescriptors.pack.packed?
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
    skip "needs CRuby 3.1 with glibc" unless SUPPORTED
    out, err, status = ruby_run(GROW + <<~RUBY)
      raise "not packed" unless Herd::PageDescriptors.pack.packed?
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

  def test_packing_twice_leaves_packed_descriptors_alone
    skip "needs CRuby 3.1 with glibc" unless SUPPORTED
    out, err, status = ruby_run(GROW + <<~RUBY)
      Herd::PageDescriptors.pack
      again = Herd::PageDescriptors.pack
      p [again.packed?, again.skipped]
    RUBY
    assert status.success?, err
    packed, reason = eval(out) # standard:disable Security/Eval
    refute packed
    assert_match(/already packed/, reason)
  end

  def test_nothing_moves_while_other_threads_run
    skip "needs CRuby 3.1 with glibc" unless SUPPORTED
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      thread = Thread.new { sleep }
      packed = Herd::PageDescriptors.pack
      thread.kill
      p [packed.packed?, packed.to_s]
    RUBY
    assert status.success?, err
    packed, line = eval(out) # standard:disable Security/Eval
    refute packed
    assert_equal "GC page descriptors left in place: 1 other thread alive", line
  end

  def test_a_plan_that_outgrows_the_pages_kept_writes_nothing
    skip "needs CRuby 3.1 with glibc" unless SUPPORTED
    out, err, status = ruby_run(GROW + <<~RUBY)
      Herd::PageDescriptors::Relocation.send(:remove_const, :ALLOCATION_BUDGET)
      Herd::PageDescriptors::Relocation.const_set(:ALLOCATION_BUDGET, 0)
      before = spread.call
      packed = Herd::PageDescriptors.pack
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
    skip "needs CRuby 3.1 with glibc" unless SUPPORTED
    out, err, status = ruby_run(GROW + <<~RUBY)
      $young = Array.new(100_000) { [] }
      report = Herd::Heap.prepare(warmup: false, seal_malloc: true)
      plain = Herd::Heap.prepare(warmup: false, max_gc_runs: 1, pack_descriptors: false)
      p [report.packed&.packed?, report.to_s, plain.packed]
    RUBY
    assert status.success?, err
    packed, line, plain = eval(out) # standard:disable Security/Eval
    assert packed, line
    assert_match(/GC page descriptors packed: .*; \d+ malloc free chunks sealed/, line)
    assert_nil plain
  end

  def test_report_says_why_nothing_moved
    report = Herd::PageDescriptors::Packed.new(descriptors: 0, moved: 0, pages_before: 0, pages_after: 0, skipped: "2 other threads alive", duration: 0.001)
    refute report.packed?
    assert_equal "GC page descriptors left in place: 2 other threads alive", report.to_s
  end
end
