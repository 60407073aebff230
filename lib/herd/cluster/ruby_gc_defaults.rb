# frozen_string_literal: true

module Herd
  module Cluster
    # Ruby GC settings herd gives the processes of `herd serve` when the
    # command re-executes itself ({LeanMonitor}): Ruby reads them once, at
    # start, so the re-exec is the one moment they can be set for the whole
    # tree (monitor, molds, workers). A variable the user set wins: herd
    # only fills in the ones missing. Why each, with the runs that chose
    # them: docs/CONFIGURATION.md, "Ruby's GC settings".
    #
    # - RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO=0.25 (Ruby's default 0.65):
    #   heap pages are given back once a quarter of the heap is free, so
    #   the slack of the boot's last growth does not stay resident in every
    #   mold and worker.
    # - RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO=0.10 (default 0.20), on Rubies
    #   that count the heap's growth in slots (3.4): there a minor GC that
    #   leaves under the minimum free makes the next GC a major one without
    #   growing the heap, and a worker's heap, packed by the mold, starts
    #   under 0.20, so every few GCs were major ones.
    # @api private
    module RubyGCDefaults
      DEFAULTS = {"RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO" => "0.25"}.freeze
      # Ruby 3.4's GC.stat names the heap's room to grow in slots.
      SLOT_GROWTH = {"RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO" => "0.10"}.freeze

      class << self
        # @param env [Hash] the environment of the command
        # @return [Hash{String => String}] the defaults `env` does not set
        def missing(env)
          defaults.reject { |name, _value| env.key?(name) }
        end

        # @return [Hash{String => String}] herd's defaults on this Ruby
        def defaults
          GC.stat.key?(:heap_allocatable_slots) ? DEFAULTS.merge(SLOT_GROWTH) : DEFAULTS
        end

        # @param settings [Hash{String => String}]
        # @return [String] "NAME=value ..." for logs
        def describe(settings)
          settings.map { |name, value| "#{name}=#{value}" }.join(" ")
        end
      end
    end
  end
end
