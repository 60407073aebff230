# frozen_string_literal: true

# herd for bench/cow.rb as herd.rb; the driver runs this one with
# RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO=0.65 in its environment, Ruby's own
# default, which herd otherwise lowers to 0.25 for the processes of
# `herd serve` (Herd::Cluster::RubyGCDefaults): what that default buys.
workers 4
refork_after [50, 100, 1000]
timeout 120
