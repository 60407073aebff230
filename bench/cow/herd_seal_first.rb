# frozen_string_literal: true

# herd.rb with the first mold sealing malloc's free chunks, as every later
# mold does, instead of only trimming (the choice of 3199c1f).
workers 4
refork_after [50, 100, 1000]
timeout 120
prepare_heap seal_malloc: true
