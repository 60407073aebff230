# frozen_string_literal: true

module Herd
  module Cluster
    class Monitor
      # What the monitor's parts read from the context they share with it:
      # its config may be replaced by a reload, so it is read each time,
      # never kept.
      # @api private
      module Part
        private

        def config
          @context.config
        end

        def log(message)
          @context.log.info(Monitor::ROLE, message)
        end
      end
    end
  end
end
