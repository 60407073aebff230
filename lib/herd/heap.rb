# frozen_string_literal: true

require_relative "clock"
require_relative "env_switch"
require_relative "heap/last_compaction"
require_relative "heap/low_priority"
require_relative "heap/major_gc"
require_relative "heap/malloc"
require_relative "heap/page_descriptors"
require_relative "heap/room"

module Herd
  # Prepares the Ruby heap so that a fork keeps its pages shared.
  #
  # On Ruby <= 3.2 an object's GC age lives in its header: every GC that a
  # young object survives writes to it, and a write to a page shared with a
  # forked child copies the page. Aging young objects to old before forking
  # (Ruby calls it promotion; herd says aging, and keeps "promote" for a
  # worker that becomes the next mold) means the children's GCs no longer
  # write to those headers. On Ruby >= 3.3, `Process.warmup` does this (and
  # more) and is used instead.
  module Heap
    # What {Heap.prepare} did.
    #
    # @!attribute strategy
    #   @return [Symbol] :process_warmup (Process.warmup), :aging (GC runs), or :none
    #     (the heap was already mostly old)
    # @!attribute gc_runs
    #   @return [Integer] GCs run by herd (0 for :process_warmup, which runs its own)
    # @!attribute compacted
    #   @return [Boolean] whether the heap was compacted
    # @!attribute compaction_skipped
    #   @return [String, nil] why `compact: :auto` did not compact
    # @!attribute major_gc
    #   @return [String, nil] why a major GC ran for the children's sake
    #     (`major_gc_when_due:`), nil when none did
    # @!attribute duration
    #   @return [Float] seconds spent
    # @!attribute young_before / young_after / old_before / old_after
    #   @return [Integer] object counts
    # @!attribute room
    #   @return [Room::Made, nil] the free slots added for the children
    #     (`room:`), nil when not asked for
    # @!attribute filled
    #   @return [Integer] free slots filled (see `fill_free_slots:`)
    # @!attribute spared
    #   @return [Integer] free slots left free on purpose: those of memory
    #     pages mostly free (see `fill_free_slots:`) and a margin
    # @!attribute sealed
    #   @return [Malloc::Sealed, nil] what `seal_malloc:` did
    # @!attribute trimmed
    #   @return [Boolean] whether `trim_malloc:` gave malloc's free pages back
    # @!attribute packed
    #   @return [PageDescriptors::Packed, nil] what `pack_descriptors:` did
    # @!attribute priority
    #   @return [LowPriority::Outcome, nil] the priority the GCs ran at
    #     (`nice:`), nil when none was asked for
    # @!attribute stepped_aside
    #   @return [String, nil] why nothing at all was done ({Heap.other_gc})
    Report = Struct.new(:strategy, :gc_runs, :compacted, :compaction_skipped, :major_gc, :room, :filled, :spared, :sealed, :trimmed,
      :packed, :duration, :young_before, :young_after, :old_before, :old_after, :priority, :stepped_aside,
      keyword_init: true) do
      # @return [String] one line for logs
      def to_s
        return "heap left as it is: #{stepped_aside}" if stepped_aside

        format("heap prepared (%s): %d GC run%s%s%s, young %d -> %d, old %d -> %d%s, %.1f ms",
          strategy, gc_runs, (gc_runs == 1) ? "" : "s", compaction_summary,
          filled.to_i.positive? ? " + #{filled} free slots filled (#{spared.to_i} left free)" : "",
          young_before, young_after, old_before, old_after,
          "#{room_summary}#{packed_summary}#{malloc_summary}#{priority_summary}",
          duration * 1000)
      end

      # Keeps the objects that fill free slots alive as long as this report:
      # hold the report until the children are forked (and, for memory's
      # sake, as long as they live).
      def retain(objects)
        @retained = objects
        self
      end

      # Undoes what only the children needed, once they are gone: the
      # free-slot fillers become garbage and the sealed malloc chunks are
      # given back ({Malloc::Sealed#unseal}). A process that prepares its
      # heap before every batch of forks (Herd.map in a loop) must call it,
      # or each seal keeps the memory freed since the last one for good.
      # Idempotent; does nothing in a child.
      # @return [self]
      def release
        fillers = @retained
        @retained = nil
        sealed&.unseal
        # The fillers were aged to old with the rest, and only a major
        # GC frees old objects: until Ruby decides on one, they hold their
        # pages and new objects take fresh ones. Prepared before every
        # Herd.map of a long-lived process, that adds up; one major GC keeps
        # RSS flat (docs/COPY_ON_WRITE.md, "malloc's free chunks").
        GC.start(full_mark: true, immediate_sweep: true) if fillers && !fillers.empty?
        self
      end

      private

      # Only when the room added slots, or stopped short: an unsupported
      # Ruby is said once, in Heap::Steps.
      def room_summary
        (text = room&.to_s) ? "; #{text}" : ""
      end

      # Says why when herd stepped aside (another Ruby, another malloc,
      # other threads, HERD_HEAP_INTERNALS=0): a log must not read as if
      # packing ran.
      def packed_summary
        packed ? "; #{packed}" : ""
      end

      def compaction_summary
        return " + compaction" if compacted

        major = if major_gc == MAJOR_GC_FIRST
          " + a major GC first (major_gc_first)"
        elsif major_gc
          " + a major GC (#{major_gc}: every child would soon have run one)"
        end
        "#{", #{compaction_skipped}" if compaction_skipped}#{major}"
      end

      def priority_summary
        (priority && strategy != :none) ? "; GCs #{priority}" : ""
      end

      def malloc_summary
        return "; #{sealed}" if sealed

        trimmed ? "; malloc's free pages given back, its free chunks left free" : ""
      end
    end

    # `HERD_HEAP_INTERNALS=0` (or false, no, off) in the environment turns
    # off what reaches into Ruby's and glibc's internals — page-descriptor
    # packing and malloc sealing — for every caller: the server's molds,
    # the pool, the fork hook. Read at each {Heap.prepare}.
    INTERNALS_ENV = "HERD_HEAP_INTERNALS"

    # The keywords of {Heap.prepare}.
    OPTIONS = %i[compact process_warmup fill_free_slots pack_descriptors seal_malloc trim_malloc
      major_gc_first major_gc_when_due room max_gc_runs young_ratio nice].freeze

    # Free slots {Heap.prepare} leaves unfilled whatever their page. Filling
    # every one, the few objects made meanwhile took a new heap page at
    # every preparation, which Ruby kept (far below its free-slots ratio)
    # and the next preparation filled again: +1 page per Herd.map call. A
    # wider margin costs the children, since the slots it spares lie
    # scattered over shared pages (docs/COPY_ON_WRITE.md, "Free slots and
    # freed memory reused in shared pages").
    FILL_MARGIN = 16
    # A 4 KiB memory page more than this share free keeps its free slots:
    # a child that allocates there copies it, but gets that many slots for
    # the copy, about what a fresh page would cost it.
    SPARSE_PAGE = 0.75
    # {Report#major_gc} when `major_gc_first:` ran it.
    MAJOR_GC_FIRST = "first"
    # What {Heap.prepare}'s `compact:` takes.
    COMPACT_VALUES = [true, false, nil, :auto].freeze
    # Bytes of one object slot in Ruby's heap.
    # @api private
    SLOT_SIZE = GC::INTERNAL_CONSTANTS.fetch(:RVALUE_SIZE) { GC::INTERNAL_CONSTANTS.fetch(:BASE_SLOT_SIZE, 40) }
    # Stop aging once young objects are at most this share of live ones.
    DEFAULT_YOUNG_RATIO = 0.01
    # Objects need three survived GCs to become old on Ruby 3.1; one spare.
    DEFAULT_MAX_GC_RUNS = 4

    class << self
      # Ages young objects to old (or calls `Process.warmup` where it
      # exists) and optionally compacts. Cheap when the heap is already mostly
      # old: it then runs no GC at all.
      #
      # @param compact [Boolean, Symbol] also run `GC.compact` (where
      #   available). Do it before the first fork of a template only:
      #   compacting again writes to pages already shared with earlier
      #   children. `:auto` compacts unless this heap, or an ancestor's it
      #   was forked from, was compacted and the live objects have grown
      #   less than {LastCompaction::GROWTH} since: for templates forked one
      #   from another's child, as a reforking server's molds are. Where
      #   `Process.warmup` exists (it compacts), `:auto` calls it only when
      #   compacting is due, and ages objects with GCs otherwise. nil is false
      # @param process_warmup [Boolean] use `Process.warmup` where it exists (Ruby >= 3.3)
      # @param max_gc_runs [Integer] at most this many GCs to age objects with (a GC
      #   Ruby started meanwhile is still finished: a fork must not land in it)
      # @param young_ratio [Float] stop when young <= live * young_ratio
      # @param fill_free_slots [Boolean] fill the heap's free slots with
      #   placeholder objects, kept alive by the returned report. A child's
      #   first allocations otherwise land in free slots scattered over
      #   shared pages and copy a page each; filled, they go to fresh pages
      #   of the child's own. Hold the report while the children live.
      #   The slots of memory pages that are mostly free ({SPARSE_PAGE})
      #   and a margin ({FILL_MARGIN}) stay free: copying such a page costs a
      #   child about what a fresh one would, and this process allocates
      #   there instead of adding heap pages (which Ruby keeps, and which the
      #   next preparation would fill again: +1 page per Herd.map call)
      # @param pack_descriptors [Boolean] move the GC's page descriptors
      #   next to each other ({PageDescriptors.pack}; Ruby 3.1 with glibc
      #   only): a child's first GC then copies a few hundred KiB of them
      #   instead of one 4 KiB page per object page
      # @param seal_malloc [Boolean] last, take every free chunk of glibc's
      #   malloc ({Malloc.seal_free_chunks}): a child's mallocs otherwise
      #   reuse them and copy the shared pages they lie in. The chunks stay
      #   taken until {Report#release}: call it when the children are gone
      # @param major_gc_first [Boolean] start with one major GC, whatever
      #   the GC's counters say: in a worker promoted to mold, it frees what
      #   the worker's work left old, and a job worker's children then ran no
      #   major GC of their own over bench/jobs' runs, where they otherwise
      #   ran up to one after another (docs/COPY_ON_WRITE.md, "A major GC due
      #   in every child"). The default of job workers' molds. Left out when
      #   this preparation compacts (`compact: true`, or `:auto` with no
      #   record of an earlier compaction), which runs one
      # @param major_gc_when_due [Boolean] after the GCs above, run a major
      #   GC when the children would soon start one each ({MajorGC.due}):
      #   Ruby's next GC is a major one, or half the budget of one is spent.
      #   Needless after a compaction or `Process.warmup`, which run one
      # @param room [Boolean] after the GCs, add empty heap pages until
      #   the children start with the free slots Ruby's own growth aims at
      #   ({Room}): with the few a prepared heap keeps, each child otherwise
      #   runs a major GC every few minor ones. Ruby >= 3.4; ignored with
      #   `fill_free_slots:`, whose children fill the heap's slots anyway
      # @param trim_malloc [Boolean] last (ignored with `seal_malloc:`), give
      #   the whole pages inside malloc's free chunks back to the kernel but
      #   leave the chunks free ({Malloc.trim}). For a template whose children
      #   will soon be templates themselves (the first mold of a reforking
      #   server): their warm-up mallocs then fill the holes the boot left, and
      #   the next template is as compact as a process warmed in one go, where
      #   after sealing they would all land in fresh memory
      # @return [Report]
      def prepare(compact: false, process_warmup: true, fill_free_slots: false, pack_descriptors: true,
        seal_malloc: false, trim_malloc: false, major_gc_first: false, major_gc_when_due: true, room: true,
        max_gc_runs: DEFAULT_MAX_GC_RUNS,
        young_ratio: DEFAULT_YOUNG_RATIO, nice: nil)
        refused = compact_refused(compact) and raise ArgumentError, refused
        if (gc = other_gc)
          return Report.new(strategy: :none, gc_runs: 0, compacted: false, filled: 0, spared: 0, trimmed: false,
            duration: 0.0, young_before: 0, young_after: 0, old_before: 0, old_after: 0, stepped_aside: gc)
        end

        started = clock
        before = census
        with_gc_enabled do
          # Only the GCs run at the lower priority: they are the CPU. What
          # follows reads and writes glibc's malloc state, which belongs to
          # the thread that will fork (its arena, its tcache).
          (strategy, runs, compacted, skipped, major), priority = LowPriority.run(nice) do
            # A compaction, due at a template's first preparation, runs one anyway.
            first_major = (major_gc_first && !compacts_anyway?(compact)) ? major_gc! : 0
            # Process.warmup compacts: with `:auto`, only when compacting is due.
            warmup = process_warmup && Process.respond_to?(:warmup)
            due, first_runs = (warmup && compact == :auto) ? compaction_due : [true, 0]
            first_runs += first_major
            gcs = if warmup && due
              warm_up(before, young_ratio, compact)
            else
              # With filling, one GC first (it frees the garbage, so that the
              # fill sees every free slot), and the aging after the fill
              # ages both: 4 GCs, not 3 before the fill and 3 more after it.
              age_and_compact(compact,
                (fill_free_slots && compact != true) ? [max_gc_runs, 1].min : max_gc_runs,
                young_ratio, runs: first_runs)
            end
            gcs = major_gc_when_due ? with_major_gc_when_due(*gcs) : gcs
            first_major.positive? ? first_major_gc(gcs, first_major) : gcs
          end
          # After the GCs (which may free pages and their descriptors),
          # before filling free slots (packing needs a few) and sealing
          # (which then takes the old descriptors' chunks). A heap left as
          # it was needs no second look.
          made = Room.make if room && !fill_free_slots
          runs += made.gc_runs if made
          off = internals_off
          packed = (off ? PageDescriptors.skipped(off) : PageDescriptors.pack) if pack_descriptors && strategy != :none
          fillers, spared = fill_free_slots ? fill : [[], 0]
          # Ages the fillers (and what the first GC left young) to old; the
          # fillers of mostly free pages, dropped, are freed by the first run.
          runs += age(max_gc_runs, young_ratio) unless fillers.empty? && spared.zero?
          runs += finish_gc_under_way
          sealed = (off ? Malloc.skipped(off) : Malloc.seal_free_chunks) if seal_malloc
          trimmed = !seal_malloc && trim_malloc && Malloc.trim
          # Rarely, the seal's own allocations start one: a child forked into
          # it would cost more than the chunks that GC frees.
          runs += finish_gc_under_way
          report(strategy, [runs, compacted, skipped, major], made, fillers.size, spared, sealed, trimmed, packed,
            started, before, priority).retain(fillers)
        end
      end

      # @param value [Object] what a caller passes as `compact:`
      # @return [String, nil] why {prepare} would refuse it, nil when it takes it
      def compact_refused(value)
        "compact: must be true, false or :auto, got #{value.inspect}" unless COMPACT_VALUES.include?(value)
      end

      # Objects not yet old, as the GC counts them.
      # @return [Hash] :young, :old, :live
      def census
        stat = GC.stat
        live = stat[:heap_live_slots]
        old = stat[:old_objects]
        {live: live, old: old, young: [live - old - stat[:remembered_wb_unprotected_objects].to_i, 0].max}
      end

      # @return [String, nil] why packing and sealing are switched off
      #   ({INTERNALS_ENV}), nil when they are not
      def internals_off(env = ENV)
        value = env[INTERNALS_ENV]
        EnvSwitch.off?(value) ? "#{INTERNALS_ENV}=#{value}" : nil
      end

      # Every step counts on the default GC's generations, pages and
      # statistics; a modular GC (Ruby >= 3.4, RUBY_GC_LIBRARY) has none of them.
      # @return [String, nil] why the heap is left alone, nil on the default GC
      def other_gc
        return nil unless GC.respond_to?(:config)

        implementation = GC.config[:implementation]
        return nil if implementation.nil? || implementation == "default"

        "the GC is #{implementation}, herd knows the generations and pages of Ruby's default GC only"
      end

      # @return [Boolean] whether this Ruby can compact its heap
      def compaction_supported?
        GC.respond_to?(:compact) && GC.respond_to?(:latest_compact_info)
      end

      # Free slots of the heap that Object.new takes from. Ruby >= 3.2 has
      # one heap per slot size, and GC.stat's free slots count them all:
      # filling that many objects overflowed into new pages of the smallest.
      # Counted after a GC's sweep: its garbage not yet swept counts as used.
      # @api private
      # @return [Integer]
      def object_heap_free_slots
        return GC.stat(:heap_free_slots) unless GC.respond_to?(:stat_heap)

        heap = GC.stat_heap(0)
        [heap[:heap_eden_slots] - (heap[:total_allocated_objects] - heap[:total_freed_objects]), 0].max
      end

      private

      # An already-old heap needs nothing, not even Process.warmup (a major
      # GC and a compaction): that is what makes preparing before every fork
      # cheap. Unless the caller asked for the compaction itself.
      def warm_up(before, young_ratio, compact)
        return [:none, 0, false] if mostly_old?(before, young_ratio) && compact != true

        Process.warmup
        LastCompaction.record
        [:process_warmup, 0, true]
      end

      # Whether `compact: :auto` is due, judged on what a GC leaves alive: a
      # worker promoted to mold holds the garbage of its last requests or
      # jobs, which counts as live until a GC and would read as growth.
      # @return [Array(Boolean, Integer)] whether it is due, GC runs taken
      def compaction_due
        return [true, 0] unless LastCompaction.growth
        return [false, 0] unless LastCompaction.due

        GC.start(full_mark: false, immediate_sweep: true)
        [!LastCompaction.due.nil?, 1 + finish_gc_under_way]
      end

      # @return [Integer] GC runs
      def major_gc!
        GC.start(full_mark: true, immediate_sweep: true)
        1 + finish_gc_under_way
      end

      def compacts_anyway?(compact)
        compact == true || (compact == :auto && LastCompaction.growth.nil? && compaction_supported?)
      end

      # The report of a preparation that started with a major GC: counted
      # (Process.warmup's path counts none of its own), and said.
      def first_major_gc(gcs, runs)
        strategy, total, compacted, skipped, reason = gcs
        total += runs if strategy == :process_warmup
        [(strategy == :none) ? :aging : strategy, total, compacted, skipped, reason || MAJOR_GC_FIRST]
      end

      # A compaction (Process.warmup's too) ran a major GC already.
      # @return [Array] strategy, GC runs, whether compacted, why `:auto`
      #   did not, why a major GC ran
      def with_major_gc_when_due(strategy, runs, compacted, skipped = nil)
        reason = !compacted && MajorGC.due
        return [strategy, runs, compacted, skipped, nil] unless reason

        [(strategy == :none) ? :aging : strategy, runs + major_gc!, compacted, skipped, reason]
      end

      # @return [Array] strategy, GC runs, whether compacted, why `:auto` did not
      # @param runs [Integer] GC runs already taken for this preparation
      def age_and_compact(compact, max_gc_runs, young_ratio, runs: 0)
        runs += age(max_gc_runs, young_ratio)
        # After the aging GCs, which free young garbage; dead old
        # objects still count as live until a major GC, which errs towards
        # compacting.
        skipped = LastCompaction.skipped if compact == :auto && !LastCompaction.due && compaction_supported?
        compacted = compact && !skipped && compact!
        runs += age(max_gc_runs, young_ratio) if compacted
        [(runs.zero? && !compacted) ? :none : :aging, runs, compacted, skipped]
      end

      # @return [Array(Array, Integer)] the fillers kept, and the free slots
      #   left free. Stops {FILL_MARGIN} slots short of the last free one,
      #   checked again after each batch: the objects made meanwhile must
      #   not need a new heap page. What {#keep_dense} needs is made first.
      def fill
        free = object_heap_free_slots
        fillers = []
        pages = []
        counts = Hash.new(0)
        kept = []
        4.times do
          count = object_heap_free_slots - FILL_MARGIN
          break unless count.positive?

          count.times { fillers << Object.new }
        end
        keep_dense(fillers, pages, counts, kept)
        [kept, [free - kept.size, 0].max]
      end

      # Keeps the fillers that do not lie in memory pages mostly made of
      # fillers: those pages were mostly free. The dropped ones are young
      # and go at the next minor GC.
      def keep_dense(fillers, pages, counts, kept)
        fillers.each { |filler| pages << Fiddle.dlwrap(filler) / Malloc::PAGE }
        pages.each { |page| counts[page] += 1 }
        sparse = SPARSE_PAGE * Malloc::PAGE / SLOT_SIZE
        fillers.each_with_index { |filler, i| kept << filler if counts[pages[i]] <= sparse }
      end

      def age(max_gc_runs, young_ratio)
        runs = 0
        young = nil
        while runs < max_gc_runs
          counts = census
          # Stop when done, or when a GC aged nothing more: a few dozen
          # objects (the GC's own, this method's) are always young. An object
          # needs three GCs to be old, so only from the third on does an
          # unchanged count mean nothing is left to age.
          break if mostly_old?(counts, young_ratio) || (runs >= 3 && counts[:young] >= young)

          young = counts[:young]
          # A minor GC ages every young object as much as a full one does, and
          # costs nothing for the old ones.
          GC.start(full_mark: false, immediate_sweep: true)
          runs += 1 + finish_gc_under_way
        end
        runs
      end

      # A GC that Ruby started by itself may still be under way: when
      # aging makes more old objects than Ruby's limit, the next
      # allocation starts a major GC, marked incrementally on Ruby >= 3.3.
      # Until it ends, the old-object count reads low (the aging then
      # looks stuck), and a child forked meanwhile finishes it, writing to
      # every page it marks. One more GC finishes it.
      # @return [Integer] GCs run
      def finish_gc_under_way
        runs = 0
        while GC.latest_gc_info(:state) != :none && runs < 3
          GC.start(full_mark: false, immediate_sweep: true)
          runs += 1
        end
        runs
      end

      def mostly_old?(counts, young_ratio)
        counts[:young] <= counts[:live] * young_ratio
      end

      def compact!
        return false unless compaction_supported?

        GC.compact
        LastCompaction.record
        true
      rescue NotImplementedError
        false
      end

      def with_gc_enabled
        was_disabled = GC.enable
        yield
      ensure
        GC.disable if was_disabled
      end

      # @param gcs [Array] GC runs, whether compacted, why `:auto` did not
      def report(strategy, gcs, room, filled, spared, sealed, trimmed, packed, started, before, priority)
        after = census
        runs, compacted, skipped, major = gcs
        Report.new(strategy: strategy, gc_runs: runs, compacted: compacted, compaction_skipped: skipped, major_gc: major,
          room: room, filled: filled,
          spared: spared, sealed: sealed,
          trimmed: trimmed ? true : false, packed: packed, priority: priority,
          duration: clock - started,
          young_before: before[:young], young_after: after[:young], old_before: before[:old], old_after: after[:old])
      end

      def clock
        Clock.now
      end
    end
  end
end
