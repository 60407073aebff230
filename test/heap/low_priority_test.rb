# frozen_string_literal: true

require "test_helper"
require "herd/heap/low_priority"

# Work at a lower CPU priority in a thread of its own (a mold's heap
# preparation while the workers serve).
class LowPriorityTest < Herd::Test
  LINUX = Herd::Heap::LowPriority.unsupported_reason.nil?

  def nice_of(tid)
    File.read("/proc/self/task/#{tid}/stat").split(") ").last.split[16].to_i
  end

  def test_no_lower_priority_asked_runs_the_block_on_the_callers_thread
    [nil, 0].each do |nice|
      value, outcome = Herd::Heap::LowPriority.run(nice) { Thread.current }
      assert_same Thread.current, value
      assert_nil outcome
    end
  end

  def test_the_block_runs_in_a_thread_at_that_nice_value_and_the_caller_keeps_its_own
    skip Herd::Heap::LowPriority.unsupported_reason unless LINUX
    caller_nice = nice_of(Thread.current.native_thread_id)
    (tid, nice, thread), outcome = Herd::Heap::LowPriority.run(10) do
      id = Thread.current.native_thread_id
      [id, nice_of(id), Thread.current]
    end
    refute_same Thread.current, thread
    refute thread.alive?
    assert_equal [10, 10], [nice, outcome.nice]
    assert_nil outcome.skipped
    assert_equal "at nice 10", outcome.to_s
    assert_equal caller_nice, nice_of(Thread.current.native_thread_id)
    refute_equal Thread.current.native_thread_id, tid
  end

  def test_an_exception_in_the_block_reaches_the_caller
    error = assert_raises(KeyError) { Herd::Heap::LowPriority.run(5) { {}.fetch(:missing) } }
    assert_match(/missing/, error.message)
  end

  def test_a_nice_value_out_of_range_is_refused
    [20, -1, 1.5].each do |nice|
      error = assert_raises(ArgumentError) { Herd::Heap::LowPriority.run(nice) { flunk "ran" } }
      assert_match(/nice: must be an Integer in 1\.\.19/, error.message)
    end
  end

  def test_with_m_n_threads_no_thread_is_niced
    skip Herd::Heap::LowPriority.unsupported_reason unless LINUX
    assert_equal "RUBY_MN_THREADS=1: Ruby threads share native threads", Herd::Heap::LowPriority.unsupported_reason("RUBY_MN_THREADS" => "1")
    assert_nil Herd::Heap::LowPriority.unsupported_reason("RUBY_MN_THREADS" => "0")
  end

  def test_elsewhere_the_block_runs_on_the_callers_thread_and_the_outcome_says_why
    Herd::Heap::LowPriority.stub(:unsupported_reason, "not Linux (stubbed)") do
      value, outcome = Herd::Heap::LowPriority.run(10) { Thread.current }
      assert_same Thread.current, value
      assert_nil outcome.nice
      assert_equal "at the caller's priority (not Linux (stubbed))", outcome.to_s
    end
  end

  # Only the GCs move to the other thread: what they free goes back to the
  # main arena, where sealing (on the calling thread, which forks) finds it,
  # and packing sees no other thread alive.
  def test_a_heap_prepared_at_a_lower_priority_is_still_packed_and_sealed
    skip Herd::Heap::LowPriority.unsupported_reason unless LINUX
    skip "glibc malloc only" unless Herd::Heap::Malloc.available?
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      GC.disable # young and garbage for sure when the preparation's GCs come
      $strings = Array.new(20_000) { |i| "x" * 1000 + i.to_s } # malloc'd on every Ruby (3.2+ embeds up to 640 bytes)
      $strings = $strings.each_slice(2).map(&:first)
      GC.enable
      report = Herd::Heap.prepare(process_warmup: false, seal_malloc: true, nice: 10)
      p [report.sealed.chunks > 1000, report.priority.nice, report.to_s]
      report.release
    RUBY
    assert status.success?, err
    sealed, nice, line = eval(out) # standard:disable Security/Eval
    assert sealed, line
    assert_equal 10, nice
    assert_match(/; GCs at nice 10, /, line)
    refute_match(/other thread/, line)
  end
end
