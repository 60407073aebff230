# frozen_string_literal: true

# Only what the monitor runs: the mold loads the HTTP layer, Rack and the
# application (AppLoader).
require_relative "version"
require_relative "errors"
require_relative "server/config"
require_relative "cluster"
require_relative "server/service"

module Herd
  # `herd serve`: a preforking Rack server with a monitor, a mold and sibling
  # workers. See ARCHITECTURE.md and docs/CONFIGURATION.md.
  module Server
    # Runs a server until it is stopped.
    # @param config [Config]
    # @return [Integer] exit status
    def self.run(config)
      Cluster::Monitor.new(config, service: Service.new).run
    end
  end
end
