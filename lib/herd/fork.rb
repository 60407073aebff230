# frozen_string_literal: true

# `require "herd/fork"` makes every fork of this process copy-on-write friendly:
# Kernel#fork, Process.fork and IO.popen("-") prepare the heap first.
# Set HERD_COW_FRIENDLY=0 to load it with heap preparation off.
require_relative "../herd"

Herd::ForkHook.install(cow_friendly: !%w[0 false no off].include?(ENV["HERD_COW_FRIENDLY"].to_s.downcase))
