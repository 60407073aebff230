# frozen_string_literal: true

require_relative "../heap"
require_relative "low_priority"
require_relative "malloc"
require_relative "page_descriptors"
require_relative "../process_exit"

module Herd
  module Heap
    # Which steps of the heap preparation run on this Ruby, and why each one
    # that does not steps aside: the answer differs by Ruby version, GC, malloc
    # and environment switch, and `herd demo fork`, the test matrix and the
    # docs (COPY_ON_WRITE.md) all print it the same way.
    # @api private
    module Steps
      # @!attribute name
      #   @return [String] the step
      # @!attribute how
      #   @return [String, nil] what it does here, when it runs
      # @!attribute stepped_aside
      #   @return [String, nil] why it does not run here
      Step = Struct.new(:name, :how, :stepped_aside) do
        # @return [Boolean]
        def runs?
          stepped_aside.nil?
        end

        # @return [String] one line
        def to_s
          runs? ? "#{name}: #{how}" : "#{name}: steps aside (#{stepped_aside})"
        end
      end

      module_function

      # @param env [Hash]
      # @return [Array<Step>]
      def all(env = ENV)
        other_gc = Heap.other_gc
        internals = other_gc || Heap.internals_off(env)
        [
          Step.new("aging", aging, other_gc),
          Step.new("compaction", "GC.compact, before a template's first fork", other_gc || compaction_missing),
          Step.new("major GC when due", major_gc, other_gc),
          Step.new("room for the children", room, other_gc || Room.unsupported),
          Step.new("free-slot filling",
            "fills the object heap's scattered free slots (few are left after a compaction)", other_gc),
          Step.new("GC page descriptors", "packed next to each other", internals || PageDescriptors.unsupported),
          Step.new("malloc sealing", "glibc's free chunks taken until the children are gone",
            internals || Malloc.unsupported),
          Step.new("low-priority GCs", "a mold's GCs at `prepare_heap nice:`", LowPriority.unsupported_reason(env)),
          Step.new("out-of-band GC", out_of_band_gc, nil),
          Step.new("fast exit", "exit! once the at_exit hooks have run", fast_exit_off(env))
        ]
      end

      # @return [String] a heading and one line per step
      def report(env = ENV)
        (["heap steps on #{ruby}:"] + all(env).map { |step| "  #{step}" }).join("\n")
      end

      # What every figure herd prints names: the Ruby, whether YJIT is on
      # (here, or in the children when RUBY_YJIT_ENABLE=1 turns it on there),
      # and the malloc.
      # @return [String] e.g. "ruby 3.4.5, YJIT on, glibc malloc"
      def ruby(env = ENV)
        yjit = defined?(RubyVM::YJIT) && (RubyVM::YJIT.enabled? || env["RUBY_YJIT_ENABLE"] == "1")
        malloc = Malloc.available? ? "glibc malloc" : "not glibc's malloc"
        "#{RUBY_ENGINE} #{RUBY_VERSION}, YJIT #{yjit ? "on" : "off"}, #{malloc}"
      end

      def aging
        if Process.respond_to?(:warmup)
          "Process.warmup (a major GC, compaction, every survivor aged to old)"
        else
          "minor GCs until the young objects are old"
        end
      end

      # A template's major GC for its children's sake ({MajorGC}): where Ruby
      # says whether its next GC is a major one (Ruby >= 3.3), that counts
      # too; elsewhere only the budgets do.
      # @param need_major_known [Boolean] whether this Ruby has the key
      # @return [String] what it does on this Ruby
      def major_gc(need_major_known = GC.latest_gc_info.key?(:need_major_by))
        "one major GC before forking when the children would soon run one each: " \
          "#{"Ruby's next GC is a major one, or " if need_major_known}half a budget of one spent" \
          "#{" (no GC.latest_gc_info(:need_major_by) before Ruby 3.3)" unless need_major_known}; " \
          "not after a compaction, which ran one"
      end

      # @return [String] what {Room} does, with this process's ratios
      def room(env = ENV)
        min, goal, max = RubyGCSettings.free_slot_ratios(env)
        format("empty heap pages added until %d%% of each heap, and of all, is free (Ruby's minimum %d%%, goal %d%%, maximum %d%%)",
          (Room.target_ratio(min, goal, max) * 100).round, (min * 100).round, (goal * 100).round, (max * 100).round)
      end

      # The server's out-of-band GC (`out_of_band_gc`, a setting of the
      # server's config rather than of the heap preparation): where Ruby says
      # whether its next GC is a major one (GC.latest_gc_info(:need_major_by),
      # Ruby >= 3.3), it stands down in a worker whose GCs keep leaving one due;
      # elsewhere it cannot tell, and runs for the worker's life.
      # @param need_major_known [Boolean] whether this Ruby has the key
      # @return [String] what it does on this Ruby
      def out_of_band_gc(need_major_known = GC.latest_gc_info.key?(:need_major_by))
        if need_major_known
          "minor GCs between a worker's requests; " \
            "stand down once they keep leaving a major GC due (GC.latest_gc_info(:need_major_by))"
        else
          "minor GCs between a worker's requests; " \
            "never stand down (no GC.latest_gc_info(:need_major_by) before Ruby 3.3)"
        end
      end

      def compaction_missing
        Heap.compaction_supported? ? nil : "this Ruby has no GC.compact"
      end

      def fast_exit_off(env)
        value = env[ProcessExit::FAST_FINISH_ENV]
        EnvSwitch.off?(value) ? "#{ProcessExit::FAST_FINISH_ENV}=#{value}" : nil
      end
    end
  end
end
