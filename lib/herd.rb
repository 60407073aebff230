# frozen_string_literal: true

require_relative "herd/version"
require_relative "herd/errors"
require_relative "herd/heap"
require_relative "herd/fork/hook"
require_relative "herd/fork/safety"
require_relative "herd/pool"

# Copy-on-write-friendly multiprocessing for Ruby.
#
# `require "herd"` changes nothing about how your program forks; it gives you the
# building blocks. `require "herd/fork"` makes every fork of the process
# copy-on-write friendly (see {Herd::ForkHook}).
module Herd
  class << self
    # Registers a block run in the parent before every fork (Kernel#fork,
    # Process.fork, IO.popen("-")), in registration order. An exception in it
    # aborts that fork with {Herd::ForkCallbackError}.
    # @yield before the fork, in the parent
    # @return [Proc] the block, so it can be passed to {remove_fork_callback}
    def before_fork(&block)
      register(:before_fork, block)
    end

    # Registers a block run in every new child right after a fork: the place to
    # reconnect databases and restart threads. Exceptions are reported on
    # stderr, never raised, so a child never runs its parent's rescue clauses.
    # The pool's `after_fork:` and the server's `after_fork` hook have the
    # same name for the same moment (docs/API.md).
    # @yield in the child, after the fork
    # @return [Proc] the block
    def after_fork(&block)
      register(:after_fork, block)
    end

    # Registers a block run in the parent after every fork, with the child's pid.
    # Exceptions are reported on stderr, never raised, so the caller always
    # learns the pid it must reap.
    # @yieldparam pid [Integer] the new child's pid
    # @return [Proc] the block
    def after_fork_parent(&block)
      register(:after_fork_parent, block)
    end

    # Unregisters a block returned by one of the callback registrations.
    # @param block [Proc] what {before_fork}, {after_fork} or {after_fork_parent} returned
    # @return [Boolean] whether it was registered
    def remove_fork_callback(block)
      ForkHook.callbacks.remove(block)
    end

    private

    def register(phase, block)
      ForkHook.install
      ForkHook.callbacks.add(phase, block)
    end
  end
end
