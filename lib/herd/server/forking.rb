# frozen_string_literal: true

require_relative "../fork_hook"

module Herd
  module Server
    # How the server forks: with interrupts deferred across the fork (a
    # signal landing before the child set its own handlers must not run the
    # parent's code in the child), and without the fork hook's heap
    # preparation (the mold prepared its heap at boot).
    module Forking
      module_function

      # @return [Integer] the child's pid
      def fork_quietly(&block)
        Thread.handle_interrupt(Object => :never) do
          ForkHook.without_heap_preparation do
            Process.fork { Thread.handle_interrupt(Object => :immediate) { block.call } }
          end
        end
      end
    end
  end
end
