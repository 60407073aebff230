# frozen_string_literal: true

# herd.rb with the booted mold compacting too: every mold compacts when its
# lineage has not (the booted one, the first promoted after a reload), or
# once the live objects grew 10% since (`compact: :auto`).
workers 4
refork_after [50, 100, 1000]
timeout 120
prepare_heap compact: :auto
