# frozen_string_literal: true

require "test_helper"

class MallocTest < Herd::Test
  GLIBC = RUBY_PLATFORM.include?("linux") && Herd::Heap::Malloc.available?

  # What every script below starts with: herd, and malloc/free from libc.
  LIBC_PRELUDE = <<~RUBY
    require "herd"
    require "fiddle"
    libc = Fiddle::Handle.new("libc.so.6")
    malloc = Fiddle::Function.new(libc["malloc"], [Fiddle::TYPE_SIZE_T], Fiddle::TYPE_UINTPTR_T)
    free = Fiddle::Function.new(libc["free"], [Fiddle::TYPE_UINTPTR_T], Fiddle::TYPE_VOID)
  RUBY

  # Frees every other block of 3,000, seals, then allocates blocks of the
  # same size: none may land in a chunk that was free at the seal. The
  # blocks kept behind them put the freed ones below the top slack, which
  # the seal leaves alone.
  SEAL_SCRIPT = LIBC_PRELUDE + <<~RUBY
    blocks = Array.new(3000) { malloc.call(1000) }
    $tail = Array.new(4) { malloc.call(100_000) }
    freed = blocks.each_slice(2).map { |block, _kept| free.call(block); block }
    sealed = Herd::Heap::Malloc.seal_free_chunks
    fresh = Array.new(200) { malloc.call(1000) }
    p [sealed.chunks, sealed.bytes, sealed.released, (fresh & freed).size, sealed.to_s]
  RUBY

  def test_sealed_free_chunks_are_not_handed_out_again
    skip "glibc malloc only" unless GLIBC
    out, err, status = ruby_run(SEAL_SCRIPT)
    assert status.success?, err
    chunks, bytes, released, reused, line = eval(out) # standard:disable Security/Eval
    assert_operator chunks, :>=, 1500, "the 1,500 freed blocks at least"
    assert_operator bytes, :>=, 1500 * 16
    assert_operator released, :>=, 0
    assert_equal 0, reused, "a malloc after the seal reused a chunk that was free before it"
    assert_match(/\A\d+ malloc free chunks sealed \(\d+\.\d MiB, \d+\.\d MiB released\)\z/, line)
  end

  def test_large_free_chunks_give_their_pages_back
    skip "glibc malloc only" unless GLIBC
    out, err, status = ruby_run(LIBC_PRELUDE + <<~RUBY)
      memset = Fiddle::Function.new(libc["memset"], [Fiddle::TYPE_UINTPTR_T, Fiddle::TYPE_INT, Fiddle::TYPE_SIZE_T], Fiddle::TYPE_UINTPTR_T)
      # 64 blocks of 100 KB, written so their pages are resident, each
      # followed by a kept one so that freeing them leaves 64 separate chunks.
      blocks = Array.new(64) { block = malloc.call(100_000); memset.call(block, 1, 100_000); malloc.call(100_000); block }
      $tail = Array.new(4) { malloc.call(100_000) }
      blocks.each { |block| free.call(block) }
      p Herd::Heap::Malloc.seal_free_chunks.released
    RUBY
    assert status.success?, err
    # Ruby's own mallocs between the frees and the seal may take a few of
    # the freed blocks back (glibc splits a free chunk for small requests).
    assert_operator Integer(out), :>=, 56 * 90_000, "the pages inside most of 64 freed 100 KB blocks"
  end

  # 2,000 small free chunks, one per page, as a booted app leaves them: a
  # child's small mallocs land one per page and copy each page, unless the
  # parent sealed them. Prints the child's Private_Dirty in kB (a malloc in
  # the parent after the fork makes pages private just the same). 600
  # bytes, a size Ruby and Fiddle rarely ask for: with 32, their own
  # mallocs took most of the chunks first in some CI runs (1,144 kB).
  CHILD_SCRIPT = LIBC_PRELUDE + <<~RUBY
    # No GC in the way: its own mallocs and frees (mark stack, finalized
    # objects) would take or add free chunks between the frees and the fork.
    GC.disable
    memset = Fiddle::Function.new(libc["memset"], [Fiddle::TYPE_UINTPTR_T, Fiddle::TYPE_INT, Fiddle::TYPE_SIZE_T], Fiddle::TYPE_UINTPTR_T)
    small = Array.new(2000) { block = malloc.call(600); big = malloc.call(4064); memset.call(big, 1, 4064); block }
    $tail = Array.new(4) { malloc.call(100_000) }
    small.each { |block| free.call(block) }
    Herd::Heap::Malloc.seal_free_chunks if ARGV.first == "seal"
    dirty = -> { File.read("/proc/self/smaps_rollup")[/^Private_Dirty:\\s+(\\d+)/, 1].to_i }
    reader, writer = IO.pipe
    pid = fork do
      2000.times { memset.call(malloc.call(600), 2, 600) }
      writer.puts(dirty.call)
      exit!(0)
    end
    writer.close
    Process.wait(pid)
    print reader.read
  RUBY

  def test_a_child_allocates_in_pages_of_its_own_after_a_seal
    skip "glibc malloc only" unless GLIBC
    private_kb = %w[plain seal].to_h do |mode|
      out, err, status = ruby_run(CHILD_SCRIPT, mode)
      assert status.success?, err
      [mode, Integer(out)]
    end
    # Fiddle's own small mallocs take some of the scattered chunks first, so
    # the premise asks for a quarter of the 2,000 pages, not all of them.
    assert_operator private_kb["plain"], :>, 2000 * 4 / 4, "without a seal the child copies a page per malloc (test premise)"
    assert_operator private_kb["seal"] * 4, :<, private_kb["plain"], "after a seal the child's mallocs copy few pages: #{private_kb}"
  end

  def test_trim_gives_free_pages_back
    skip "glibc malloc only" unless GLIBC
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      # Every 16th string stays, so the freed ones leave holes below the
      # top of the heap: free() itself gives back only a free top.
      $strings = Array.new(20_000) { |i| "x" * 1000 + i.to_s }
      $kept = $strings.each_slice(16).map(&:first)
      $strings = nil
      GC.start
      p Herd::Heap::Malloc.trim
    RUBY
    assert status.success?, err
    assert_equal "true", out.strip
  end

  def test_prepare_seals_on_request
    skip "glibc malloc only" unless GLIBC
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      plain = Herd::Heap.prepare(process_warmup: false)
      sealed = Herd::Heap.prepare(process_warmup: false, seal_malloc: true)
      p [plain.sealed, sealed.sealed.class.name, sealed.to_s.include?("malloc free chunks sealed")]
    RUBY
    assert status.success?, err
    assert_equal [nil, "Herd::Heap::Malloc::Sealed", true], eval(out) # standard:disable Security/Eval
  end

  # Trimming leaves the free chunks to malloc (a child's mallocs may fill
  # them); sealing wins when both are asked for.
  def test_prepare_trims_on_request
    skip "glibc malloc only" unless GLIBC
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      $strings = Array.new(20_000) { |i| "x" * 1000 + i.to_s }
      $strings = nil
      trimmed = Herd::Heap.prepare(process_warmup: false, trim_malloc: true)
      both = Herd::Heap.prepare(process_warmup: false, trim_malloc: true, seal_malloc: true)
      p [trimmed.trimmed, trimmed.sealed, trimmed.to_s.include?("malloc's free pages given back, its free chunks left free"),
         both.trimmed, both.sealed.class.name]
    RUBY
    assert status.success?, err
    assert_equal [true, nil, true, false, "Herd::Heap::Malloc::Sealed"], eval(out) # standard:disable Security/Eval
  end

  def test_does_nothing_without_glibc
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      Herd::Heap::Malloc.instance_variable_set(:@functions, nil)
      sealed = Herd::Heap::Malloc.seal_free_chunks
      p [Herd::Heap::Malloc.available?, sealed.chunks, sealed.to_s, sealed.unseal, Herd::Heap::Malloc.trim]
    RUBY
    assert status.success?, err
    assert_equal [false, 0, "malloc's free chunks left alone: malloc is not glibc's", 0, false], eval(out) # standard:disable Security/Eval
  end
end
