# frozen_string_literal: true

module Herd
  module Server
    # Ruby GC settings herd gives the processes of `herd serve` when the
    # command re-executes itself ({LeanMonitor}): Ruby reads them once, at
    # start, so the re-exec is the one moment they can be set for the whole
    # tree (monitor, molds, workers). A variable the user set wins: herd
    # only fills in the ones missing.
    #
    # RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO=0.25 (Ruby's default 0.65): Ruby
    # 3.1 frees heap pages only once more than that share of the heap is
    # free, so the slack of the boot's last heap growth, and the pages a
    # promoted mold's compaction empties, stay resident in every mold, and
    # a worker keeps the pages its garbage grew. bench/cow at 0d77d49: the
    # lazily memoizing app once serving 242.9 -> 223.4 MiB (Pitchfork with
    # the same setting 570 -> 402); the apps that allocate little after
    # their warm-up +1.1 and +1.5 MiB, inside the ±5 MiB that malloc's
    # layout moves them. bench/cow/gc_ratio_cpu.rb found no CPU cost: the
    # same GC count, and less GC time where the heap is larger (fewer pages
    # to sweep).
    # @api private
    module RubyGCDefaults
      DEFAULTS = {"RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO" => "0.25"}.freeze

      class << self
        # @param env [Hash] the environment of the command
        # @return [Hash{String => String}] the defaults `env` does not set
        def missing(env)
          DEFAULTS.reject { |name, _value| env.key?(name) }
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
