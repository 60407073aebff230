# frozen_string_literal: true

# `require "herd/fork"` makes every fork of this process copy-on-write friendly:
# Kernel#fork, Process.fork and IO.popen("-") prepare the heap first.
# Set HERD_PREPARE_HEAP=0 to load it with heap preparation off.
require_relative "../herd"

Herd::ForkHook.install(prepare_heap: Herd::ForkHook.prepare_heap_from_env(ENV))
