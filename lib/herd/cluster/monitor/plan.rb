# frozen_string_literal: true

module Herd
  module Cluster
    class Monitor
      # What the monitor aims for: how many workers, whether it is still
      # running, and the status it exits with. Its parts read and change it;
      # the monitor's loop acts on it.
      # @api private
      class Plan
        # @return [Integer] the workers wanted (TTIN, TTOU and a reload change it)
        attr_accessor :target
        # @return [Integer]
        attr_reader :exit_status

        def initialize(target)
          @target = target
          @state = :running
          @exit_status = 0
        end

        def running?
          @state == :running
        end

        def stopping?
          @state == :stopping
        end

        def stop!
          @state = :stopping
        end

        # The server gives up (the app never booted): it exits with 1.
        def failed!
          @exit_status = 1
        end

        # @return [String] "running" or "stopping", as /stats says it
        def to_s
          @state.to_s
        end
      end
    end
  end
end
