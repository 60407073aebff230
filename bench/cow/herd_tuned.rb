# frozen_string_literal: true

# herd for bench/cow.rb as herd.rb; the driver runs this one with
# RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO=0.25 in its environment (Ruby reads it at
# boot), so that the GC releases the pages the mold's compaction emptied
# instead of keeping ~45% of the heap free for every worker to fill with its
# garbage. A diagnosis variant, not a recommendation yet.
workers 4
refork_after [50, 100, 1000]
timeout 120
