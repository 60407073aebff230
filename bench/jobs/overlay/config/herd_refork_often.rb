# frozen_string_literal: true

# herd's settings for the setup herd-sidekiq+refork_often of bench/jobs.rb:
# reforks that keep coming, each generation serving twice as many jobs as
# the one before (against herd_refork.rb's [50, 100, 1000]).
refork_after [50, 100, 200, 400, 800, 1600]
