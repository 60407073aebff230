# frozen_string_literal: true

require "test_helper"
require "herd/cluster/jit_watch"

class JITWatchTest < Herd::Test
  # A watch over a scripted count of compiled methods.
  class Scripted < Herd::Cluster::JITWatch
    def initialize(counts)
      @counts = counts
      super()
    end

    private

    def compiled_count
      @last = @counts.shift unless @counts.empty?
      @last
    end
  end

  EVERY = Herd::Cluster::JITWatch::SAMPLE_EVERY
  QUIET = Herd::Cluster::JITWatch::QUIET

  def test_settles_after_quiet_requests_and_reports_only_changes
    watch = Scripted.new([0, 10, 20])
    changes = (1..(QUIET * 4)).filter_map do |requests|
      state = watch.after_request(requests)
      [requests, state] unless state.nil?
    end
    assert_equal [[2 * EVERY + QUIET, true]], changes, "settled once, #{QUIET} requests after the last new compilation"
    assert watch.settled
  end

  def test_compiling_again_unsettles
    watch = Scripted.new([5, 5, 5, 5, 5, 5, 9])
    states = (1..(QUIET * 2)).map { |requests| watch.after_request(requests) }.compact
    assert_equal [true, false], states
    refute watch.settled
  end

  def test_start_watches_only_where_yjit_is_on
    on = defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?
    assert_equal on, !Herd::Cluster::JITWatch.start.nil?
  end
end
