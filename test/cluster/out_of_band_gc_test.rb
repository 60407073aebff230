# frozen_string_literal: true

require "test_helper"
require "support/server_harness"
require "herd/cluster/out_of_band_gc"

class OutOfBandGCTest < Herd::Test
  # Stands in for GC: counts, allocations and free slots are set by the test.
  # It answers both ways Rubies count the room left before a GC: in slots
  # (3.4) and in pages (up to 3.3).
  class FakeGC
    attr_accessor :count, :allocated, :free_slots, :allocatable_slots, :need_major_by
    attr_reader :starts

    def initialize
      @count = 0
      @allocated = 0
      @free_slots = 1_000_000
      @allocatable_slots = 0
      @starts = []
    end

    # A key is required: without one, GC.stat builds a Hash, which the
    # worker must not do after every request.
    def stat(key)
      {total_allocated_objects: @allocated, heap_free_slots: @free_slots, heap_allocatable_slots: @allocatable_slots,
       heap_allocatable_pages: @allocatable_slots / Herd::Cluster::OutOfBandGC::SLOTS_PER_PAGE}.fetch(key)
    end

    def start(**options)
      @starts << options
      @count += 1
    end

    def latest_gc_info(key)
      {need_major_by: @need_major_by}.fetch(key)
    end
  end

  def setup
    @gc = FakeGC.new
    @oob = Herd::Cluster::OutOfBandGC.new(1_000, min_requests: 1, gc: @gc)
  end

  def test_collects_once_the_budget_is_allocated
    @gc.allocated = 999
    refute @oob.between_requests
    @gc.allocated = 1_000
    assert @oob.between_requests
    assert_equal [{full_mark: false, immediate_sweep: true}], @gc.starts
    assert_equal 1, @oob.runs
  end

  def test_counts_from_its_own_last_gc
    @gc.allocated = 1_500
    assert @oob.between_requests
    @gc.allocated = 2_400
    refute @oob.between_requests, "900 allocations since the last GC"
    @gc.allocated = 2_500
    assert @oob.between_requests
  end

  def test_a_gc_by_ruby_restarts_the_count
    @gc.allocated = 800
    @gc.count += 1 # Ruby collected during the request
    refute @oob.between_requests
    @gc.allocated = 1_700
    refute @oob.between_requests, "900 allocations since Ruby's GC"
    @gc.allocated = 1_800
    assert @oob.between_requests
  end

  def test_waits_for_its_minimum_of_requests
    oob = Herd::Cluster::OutOfBandGC.new(1_000, min_requests: 3, gc: @gc)
    @gc.allocated = 5_000 # over budget from the first request on
    refute oob.between_requests
    refute oob.between_requests
    assert oob.between_requests, "the third request since the last GC"
    @gc.allocated = 10_000
    refute oob.between_requests, "the count of requests starts over after our GC"
  end

  def test_a_gc_by_ruby_restarts_the_count_of_requests
    oob = Herd::Cluster::OutOfBandGC.new(1_000, min_requests: 2, gc: @gc)
    @gc.allocated = 5_000
    refute oob.between_requests
    @gc.count += 1 # Ruby collected during the second request
    @gc.allocated = 7_000
    refute oob.between_requests
    @gc.allocated = 9_000
    refute oob.between_requests, "one request since Ruby's GC"
    assert oob.between_requests
  end

  def test_leaves_it_to_ruby_when_its_gc_is_due_anyway
    @gc.allocated = 5_000
    @gc.free_slots = 999
    refute @oob.between_requests
    assert_empty @gc.starts
  end

  def test_pages_ruby_may_still_add_count_as_room
    @gc.allocated = 5_000
    @gc.free_slots = 10
    @gc.allocatable_slots = 3 * Herd::Cluster::OutOfBandGC::SLOTS_PER_PAGE
    assert @oob.between_requests, "3 pages of #{Herd::Cluster::OutOfBandGC::SLOTS_PER_PAGE} slots before Ruby's GC"
  end

  def test_stops_for_good_once_its_gcs_keep_leaving_a_major_gc_due
    return assert_it_never_stops unless Herd::Cluster::OutOfBandGC::NEED_MAJOR_KNOWN

    @gc.need_major_by = :nofree
    @gc.allocated = 1_000
    assert @oob.between_requests
    refute @oob.stood_down?, "one such GC may come from the heap's own growth"
    @gc.allocated = 2_000
    assert @oob.between_requests
    assert @oob.stood_down?
    @gc.allocated = 10_000
    refute @oob.between_requests
    assert_equal 2, @gc.starts.size
  end

  def test_a_gc_that_leaves_no_major_due_is_no_misfire
    @gc.need_major_by = :nofree
    @gc.allocated = 1_000
    assert @oob.between_requests
    @gc.need_major_by = nil
    assert_collects_each_budget(5, from: 2)
    refute @oob.stood_down?
  end

  def test_a_few_misfires_over_a_long_life_do_not_stop_it
    return assert_it_never_stops unless Herd::Cluster::OutOfBandGC::NEED_MAJOR_KNOWN

    assert_collects_each_budget(30, from: 1)
    @gc.need_major_by = :nofree
    assert_collects_each_budget(2, from: 31)
    refute @oob.stood_down?, "2 of 32 GCs"
  end

  # Ruby 3.1's GC.latest_gc_info has no :need_major_by: it never stops there.
  def assert_it_never_stops
    @gc.need_major_by = :nofree
    assert_collects_each_budget(5, from: 1)
    refute @oob.stood_down?
  end

  # `count` budgets of 1,000 allocations, each followed by a GC of ours.
  def assert_collects_each_budget(count, from:)
    count.times do |i|
      @gc.allocated = 1_000 * (from + i)
      assert @oob.between_requests
    end
  end

  # For real: the app reads GC.count at the end of a request and at the
  # start of the next; between them only the server ran. Its boot leaves
  # the heap room enough that Ruby itself does not collect meanwhile.
  GC_APP = <<~RUBY
    Array.new(500_000) { Object.new }
    run ->(env) {
      since = GC.count - ($gc_count_at_end || GC.count)
      20_000.times { Object.new }
      $gc_count_at_end = GC.count
      [200, {"content-type" => "text/plain"}, ["gcs=\#{since} pid=\#{Process.pid}\\n"]]
    }
  RUBY

  # GCs seen by the request after the worker's minimum of requests
  # (OutOfBandGC::MIN_REQUESTS), the first one a GC may follow.
  def gcs_between_requests(config)
    @server = Herd::ServerHarness.new(app: GC_APP, config: "workers 1\n#{config}")
    @server.ready
    responses = (Herd::Cluster::OutOfBandGC::MIN_REQUESTS + 1).times.map { @server.get("/") }
    pids = responses.map { |response| response[/pid=(\d+)/, 1] }
    assert_equal 1, pids.uniq.size, "one worker served both requests; log:\n#{@server.lines.join}"
    refute @server.lines.any? { |line| line.include?("crashed") }, @server.lines.join
    responses.last[/gcs=(\d+)/, 1].to_i
  ensure
    @server&.cleanup
  end

  def test_a_worker_collects_between_requests
    assert_equal 1, gcs_between_requests("out_of_band_gc 5_000\n")
  end

  def test_a_worker_leaves_gc_to_ruby_when_disabled
    assert_equal 0, gcs_between_requests("out_of_band_gc false\n")
  end

  def test_a_bad_budget_is_a_one_line_config_error
    @server = Herd::ServerHarness.new(config: "out_of_band_gc 0\n")
    assert_equal 1, @server.wait.exitstatus
    assert_equal ["herd: out_of_band_gc must be false or a number of allocations > 0, e.g. 10_000; got 0\n"], @server.lines
  ensure
    @server&.cleanup
  end
end
