# frozen_string_literal: true

# herd's settings for the setups herd-sidekiq+refork+no_major_gc and
# herd-solid_queue+refork+no_major_gc of bench/jobs.rb: herd_refork.rb's
# schedule, and no promoted mold runs the major GC its workers would soon
# run each (`prepare_heap major_gc_when_due: false`).
refork_after [50, 100, 1000]
prepare_heap major_gc_when_due: false
