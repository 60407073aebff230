# frozen_string_literal: true

require_relative "../cluster/lean_monitor"

module Herd
  class CLI
    # What every command that runs a monitor shares: the re-exec without
    # RubyGems first (Cluster::LeanMonitor), `--debug` kept across it.
    # @api private
    class ServerCommand
      # @param debug [Boolean] `--debug` was given (kept across the re-exec)
      def initialize(out: $stdout, err: $stderr, debug: false)
        @out = out
        @err = err
        @debug = debug
      end

      private

      # In the first process: execs this command again without RubyGems
      # (unless something rules it out); in the re-executed one: returns.
      def go_lean(command, argv)
        Cluster::LeanMonitor.adopt! || Cluster::LeanMonitor.reexec([command, *argv, *("--debug" if @debug)])
      end
    end
  end
end
