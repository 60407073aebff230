# frozen_string_literal: true

# herd's settings for the setups herd-sidekiq+refork+seal and
# herd-solid_queue+refork+seal of bench/jobs.rb: herd_refork.rb's schedule,
# and the first mold seals glibc's free chunks as the promoted ones do,
# instead of only giving their pages back (trim_malloc): its workers'
# mallocs then land in fresh memory rather than in the holes of shared pages.
refork_after [50, 100, 1000]
prepare_heap seal_malloc: true
