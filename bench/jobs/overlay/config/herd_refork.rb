# frozen_string_literal: true

# herd's settings for the setups herd-sidekiq+refork and
# herd-solid_queue+refork of bench/jobs.rb (`-c config/herd_refork.rb`):
# the schedule docs/REFORKING.md suggests, counted in jobs. The other herd
# setups run with herd's defaults (no file: refork_after false).
refork_after [50, 100, 1000]
