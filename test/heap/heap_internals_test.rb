# frozen_string_literal: true

require "test_helper"

# HERD_HEAP_INTERNALS=0, and reports that say why herd stepped aside.
class HeapInternalsTest < Herd::Test
  GLIBC = Herd::Heap::Malloc.available?
  OTHER_ALLOCATOR = Dir["/usr/lib/x86_64-linux-gnu/lib{jemalloc,tcmalloc_minimal,tcmalloc}.so.*"].min

  def test_the_switch_reads_as_herd_prepare_heap_does
    %w[0 false no off OFF].each do |value|
      assert_equal "HERD_HEAP_INTERNALS=#{value}", Herd::Heap.internals_off("HERD_HEAP_INTERNALS" => value)
    end
    [nil, "", "1", "true", "on"].each do |value|
      assert_nil Herd::Heap.internals_off("HERD_HEAP_INTERNALS" => value)
    end
  end

  def test_the_switch_turns_off_packing_and_sealing_and_the_report_says_so
    out, err, status = ruby_run(<<~RUBY, env: {"HERD_HEAP_INTERNALS" => "0"})
      require "herd"
      GC.disable # young for sure: the GCs a bigger boot (bundler) runs meanwhile would age them
      $young = Array.new(100_000) { [] }
      GC.enable
      report = Herd::Heap.prepare(process_warmup: false, seal_malloc: true)
      mapped = Herd.map(1..4, processes: 2) { |i| i * 2 }
      p [report.packed.packed?, report.sealed.chunks, report.to_s, mapped]
    RUBY
    assert status.success?, err
    packed, chunks, line, mapped = eval(out) # standard:disable Security/Eval
    refute packed
    assert_equal 0, chunks
    assert_match(/; GC page descriptors left in place: HERD_HEAP_INTERNALS=0; malloc's free chunks left alone: HERD_HEAP_INTERNALS=0, /, line)
    assert_equal [2, 4, 6, 8], mapped
  end

  def test_without_glibc_the_report_says_why_nothing_was_sealed
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      Herd::Heap::Malloc.instance_variable_set(:@functions, nil)
      Herd::Heap::Malloc.instance_variable_set(:@unsupported, "malloc is not glibc's (stubbed)")
      GC.disable # young for sure: the GCs a bigger boot (bundler) runs meanwhile would age them
      $young = Array.new(100_000) { [] }
      GC.enable
      puts Herd::Heap.prepare(process_warmup: false, seal_malloc: true).to_s
    RUBY
    assert status.success?, err
    assert_match(/malloc's free chunks left alone: malloc is not glibc's \(stubbed\)/, out)
    refute_match(/chunks sealed/, out)
    assert_match(/GC page descriptors left in place: /, out) if RUBY_VERSION.start_with?("3.1.")
  end

  def test_under_another_allocator_preloaded_nothing_is_sealed_and_the_report_says_why
    skip "no jemalloc or tcmalloc installed" unless OTHER_ALLOCATOR
    out, err, status = ruby_run(<<~RUBY, env: {"LD_PRELOAD" => OTHER_ALLOCATOR})
      require "herd"
      GC.disable # young for sure: the GCs a bigger boot (bundler) runs meanwhile would age them
      $young = Array.new(100_000) { [] }
      GC.enable
      report = Herd::Heap.prepare(process_warmup: false, seal_malloc: true)
      p [Herd::Heap::Malloc.available?, report.to_s, Herd.map([1, 2], processes: 2) { |i| i + 1 }]
    RUBY
    assert status.success?, err
    available, line, mapped = eval(out) # standard:disable Security/Eval
    refute available
    assert_match(/malloc's free chunks left alone: malloc is not glibc's \(jemalloc, tcmalloc or another allocator is loaded\)/, line)
    refute_match(/chunks sealed/, line)
    assert_equal [2, 3], mapped
  end

  # Where packing cannot run at all, the report gives that reason instead.
  def test_other_threads_alive_are_named_in_the_report
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      GC.disable # young for sure: the GCs a bigger boot (bundler) runs meanwhile would age them
      $young = Array.new(100_000) { [] }
      GC.enable
      thread = Thread.new { sleep }
      puts Herd::Heap.prepare(process_warmup: false).to_s
      thread.kill
    RUBY
    assert status.success?, err
    reason = Herd::Heap::PageDescriptors.unsupported || "1 other thread alive"
    assert_includes out, "GC page descriptors left in place: #{reason}"
  end

  def test_a_released_seal_gives_the_chunks_back_once_and_only_in_its_process
    skip "glibc malloc only" unless GLIBC
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      # No GC until the preparation's: one meanwhile (a quarter of the runs
      # of a Ruby without Bundler) left some 400 free chunks instead of thousands.
      GC.disable
      $strings = Array.new(20_000) { |i| "x" * 1000 + i.to_s } # malloc'd on every Ruby (3.2+ embeds up to 640 bytes)
      $strings = $strings.each_slice(2).map(&:first)
      GC.enable
      report = Herd::Heap.prepare(process_warmup: false, seal_malloc: true)
      reader, writer = IO.pipe
      pid = fork { writer.write(report.sealed.unseal.to_s); exit!(0) }
      writer.close
      Process.wait(pid)
      in_child = reader.read.to_i
      chunks = report.sealed.chunks
      report.release
      p [chunks > 1000, in_child, report.sealed.unsealed?, report.sealed.unseal, report.to_s.include?("since unsealed")]
    RUBY
    assert status.success?, err
    assert_equal [true, 0, true, 0, true], eval(out) # standard:disable Security/Eval
  end
end
