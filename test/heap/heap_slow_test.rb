# frozen_string_literal: true

require "test_helper"

# `rake test:slow`: many heap preparations in a row.
class HeapSlowTest < Herd::Test
  # Filling exactly heap_free_slots placeholders, plus the few objects made
  # meanwhile, took a new heap page at every preparation, which Ruby kept
  # and the next one filled again: +1 page per Herd.map call, for good.
  def test_prepare_and_release_in_a_loop_add_no_heap_pages
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      kept = Array.new(50_000) { |i| "kept \#{i}" }
      pages = []
      60.times do |n|
        churn = Array.new(5_000) { |i| "churn \#{n} \#{i}" }
        Herd::Heap.prepare(process_warmup: false, fill_free_slots: true, seal_malloc: true).release
        churn.clear
        pages << GC.stat(:heap_allocated_pages)
      end
      puts [pages[19], pages.last, kept.size].join(" ")
    RUBY
    assert status.success?, err
    # Before: 300 -> 340 pages from the 20th to the 60th; now the same.
    at20, at60 = out.split.map(&:to_i)
    assert_operator at60, :<=, at20 + 3, "heap pages after 20 preparations: #{at20}, after 60: #{at60}"
  end
end
