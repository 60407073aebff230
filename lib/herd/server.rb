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
      Cluster::Monitor.new(config, service: service(config)).run
    end

    # @return [Service, Jobs::BesideWeb] HTTP, with job workers after the web workers when `jobs` says so
    def self.service(config)
      return Service.new unless config.jobs

      require_relative "jobs/beside_web"
      Jobs::BesideWeb.new(Service.new, Jobs::Service.new(config.jobs.engine))
    end
  end
end
