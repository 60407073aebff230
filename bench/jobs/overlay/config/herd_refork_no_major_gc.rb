# frozen_string_literal: true

# herd's settings for the setups herd-sidekiq+refork+no_major_gc and
# herd-solid_queue+refork+no_major_gc of bench/jobs.rb: herd_refork.rb's
# schedule, and no promoted mold runs a major GC for its workers' sake
# (neither job workers' `major_gc_first` nor `major_gc_when_due`), as
# before 2026-11-29.
refork_after [50, 100, 1000]
prepare_heap major_gc_first: false, major_gc_when_due: false
