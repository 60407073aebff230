# frozen_string_literal: true

require "json"
require_relative "control_client"
require_relative "../memory/process_tree"
require_relative "command"

module Herd
  class CLI
    class Mem < Command
      # `herd mem --record FILE`: appends each report to FILE as one JSON
      # line (the `--json` document), flushed at once so a recording cut
      # short is still whole. When the root is a herd monitor with a control
      # endpoint, each line also carries its last rollouts, so that
      # `herd plot` can say why each generation came (refork or reload, and
      # the reason); without one, the plot marks new generations only.
      class Recorder
        # @return [Recorder]
        def self.open(path, root)
          new(File.open(path, "a"), root)
        rescue SystemCallError => e
          raise Error, "cannot record to #{path}: #{e.message}"
        end

        def initialize(io, root)
          @io = io
          title = Memory::ProcessTree.new.title(root).to_s
          address = title[/\Aherd monitor .*control=(\S+)/, 1]
          @control = address && ControlClient.new(address)
        end

        # @param report [Memory::Report]
        def write(report)
          document = report.to_h
          rollouts = self.rollouts
          document[:rollouts] = rollouts if rollouts
          @io.puts(JSON.generate(document))
          @io.flush
        end

        def close
          @io.close unless @io.closed?
        end

        protected

        # @return [Array<Hash>, nil] nil when there is no endpoint to ask
        def rollouts
          @control&.stats&.fetch("rollouts", nil)
        rescue ControlError
          nil
        end
      end
    end
  end
end
