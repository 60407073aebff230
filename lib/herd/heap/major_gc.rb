# frozen_string_literal: true

require_relative "../ruby_gc_settings"

module Herd
  module Heap
    # Whether the children of a process about to fork would start a major
    # GC soon after the fork.
    #
    # Ruby starts a major GC once one of three budgets runs out: the bytes
    # old objects malloc'd (oldmalloc), the old objects themselves, and
    # the old objects without write barriers (shady). A child inherits its
    # parent's counters with the rest of its memory. A worker promoted to
    # mold, which ran jobs or requests with minor GCs only, hands its
    # children budgets nearly spent, and each of them runs a major GC within
    # its first moments, while every page is still shared: the marking
    # writes to pages the children share (on Ruby 3.4 with YJIT, every page
    # that holds a compiled block's record), so each child copies them, and
    # each spends the CPU. One major GC in the parent resets the counters,
    # once for all of them (docs/COPY_ON_WRITE.md, "A major GC due in every
    # child").
    # @api private
    module MajorGC
      # Share of a budget spent since the last major GC past which a child
      # would soon start one.
      SPENT = 0.5

      class << self
        # @param stat [Hash] GC.stat
        # @param pending [Symbol, nil] GC.latest_gc_info(:need_major_by)
        #   (Ruby >= 3.3; nil before): the major GC Ruby decided on for its
        #   next GC
        # @return [String, nil] why a major GC is due, nil when it is not
        def due(stat = GC.stat, pending: pending_major, env: ENV)
          return "Ruby's next GC is a major one (#{pending})" if pending

          factor = limit_factor(env)
          spent = {
            "malloc'd by old objects" => spent_from_zero(stat, :oldmalloc_increase_bytes, :oldmalloc_increase_bytes_limit),
            "old objects" => spent_from_count(stat, :old_objects, :old_objects_limit, factor),
            "old objects without write barrier" =>
              spent_from_count(stat, :remembered_wb_unprotected_objects, :remembered_wb_unprotected_objects_limit, factor)
          }.compact
          budget, share = spent.max_by { |_name, value| value }
          return nil unless share && share >= SPENT

          format("%d%% of the budget for %s spent", (share * 100).round, budget)
        end

        private

        def pending_major
          GC.latest_gc_info[:need_major_by]
        end

        # A budget that a major GC sets back to zero (oldmalloc).
        def spent_from_zero(stat, count, limit)
          return nil unless stat[count] && stat[limit].to_i.positive?

          stat[count].fdiv(stat[limit])
        end

        # A budget that a major GC sets to `factor` times the count it left.
        def spent_from_count(stat, count, limit, factor)
          return nil unless stat[count] && stat[limit].to_i.positive?

          base = stat[limit] / factor
          return nil unless stat[limit] > base

          [(stat[count] - base).fdiv(stat[limit] - base), 0.0].max
        end

        # A major GC sets the limits of old and shady objects to this many
        # times their count. At 1 or less, every GC is a major one: the
        # budgets then say nothing, and Ruby's default is assumed.
        def limit_factor(env)
          value = RubyGCSettings.oldobject_limit_factor(env)
          (value > 1.0) ? value : RubyGCSettings::OLDOBJECT_LIMIT_FACTOR
        end
      end
    end
  end
end
