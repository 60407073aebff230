# frozen_string_literal: true

# herd.rb with the out_of_band_gc budget before 822300a (100,000 allocations).
workers 4
refork_after [50, 100, 1000]
timeout 120
out_of_band_gc 100_000
