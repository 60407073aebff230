# frozen_string_literal: true

module Herd
  # The GC settings (RUBY_GC_*) this Ruby started with. Ruby reads them from
  # the environment once, at start. herd's re-exec sets some for the whole
  # server and then takes them back out of ENV ({Cluster::LeanMonitor.adopt!}),
  # so ENV alone no longer says what Ruby runs with: read them here.
  # @api private
  module RubyGCSettings
    # Ruby's own values of the ratios herd reads.
    MIN_RATIO = 0.20
    MAX_RATIO = 0.65
    GOAL_RATIO = 0.40
    OLDOBJECT_LIMIT_FACTOR = 2.0

    @taken_out = {}.freeze

    class << self
      # Records the settings herd's re-exec gave Ruby and took back out of ENV.
      # @param settings [Hash{String => String}]
      def taken_out(settings)
        @taken_out = settings.dup.freeze
      end

      # The free-slot ratios as Ruby reads them: each must lie above the one
      # before (the goal may also be 0), else Ruby keeps its default.
      # @param env [Hash] where the settings the user gave are
      # @return [Array(Float, Float, Float)] minimum, goal, maximum
      def free_slot_ratios(env = ENV)
        min = read("RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO", env, MIN_RATIO, 0.0, 1.0)
        max = read("RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO", env, MAX_RATIO, min, 1.0)
        goal = read("RUBY_GC_HEAP_FREE_SLOTS_GOAL_RATIO", env, GOAL_RATIO, min, max, zero: true)
        [min, goal, max]
      end

      # @return [Float] RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR as Ruby reads it
      def oldobject_limit_factor(env = ENV)
        read("RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR", env, OLDOBJECT_LIMIT_FACTOR, 0.0, Float::INFINITY, zero: true)
      end

      private

      # Ruby takes a value above `low` and at most `high`.
      def read(name, env, default, low, high, zero: false)
        value = Float(env[name] || @taken_out[name], exception: false)
        return default unless value

        ((zero && value.zero?) || (value > low && value <= high)) ? value : default
      end
    end
  end
end
