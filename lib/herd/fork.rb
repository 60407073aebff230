# frozen_string_literal: true

# `require "herd/fork"` makes every fork of this process copy-on-write friendly:
# Kernel#fork, Process.fork and IO.popen("-") prepare the heap first.
# Set HERD_PREPARE_HEAP=0 to load it with heap preparation off
# (HERD_COW_FRIENDLY=0, the old name, still works until 1.0).
require_relative "../herd"

Herd::ForkHook.install(prepare_heap: Herd::ForkHook.prepare_heap_from_env(ENV))
