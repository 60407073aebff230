# frozen_string_literal: true

# herd's settings for the setups herd-sidekiq+refork+no_room and
# herd-solid_queue+refork+no_room of bench/jobs.rb: herd_refork.rb's
# schedule, without room for the children (no empty heap pages added in
# the molds, none in the workers after a major GC a heap forced), as
# before 2026-11-29.
refork_after [50, 100, 1000]
prepare_heap room: false
