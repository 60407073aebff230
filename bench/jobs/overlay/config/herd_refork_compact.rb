# frozen_string_literal: true

# herd's settings for the setups herd-sidekiq+refork+compact and
# herd-solid_queue+refork+compact of bench/jobs.rb: herd_refork.rb's
# schedule, and every promoted mold compacts (`compact: :auto` compacts
# only once the live objects grew 10% since the lineage's last compaction).
refork_after [50, 100, 1000]
prepare_heap compact: true
