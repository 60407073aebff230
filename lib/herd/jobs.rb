# frozen_string_literal: true

# Only what the monitor runs: the mold loads the job system and the app.
require_relative "version"
require_relative "errors"
require_relative "server/config"
require_relative "cluster"
require_relative "jobs/service"

module Herd
  # Job workers on herd's process model (`herd sidekiq`): a monitor, a
  # mold that loads the app once, and workers that each run the job
  # system's threads, reforked like `herd serve`'s. See docs/JOBS.md.
  module Jobs
    # Seconds a stop gives job workers by default: Sidekiq's own stop takes
    # up to its `timeout` (25 s by default) and 3 s more to push back what
    # is still running.
    SHUTDOWN_TIMEOUT = 40

    # A Config with the defaults of job workers: no Rack app, no per-unit `timeout`
    # (a job takes its time; the job system's own limits apply), no
    # out-of-band GC (it runs between requests), a stop long enough for
    # the job system's, and a new mold's heap prepared at the workers' own
    # priority (no request waits on a job worker, and a mold starved by
    # busy workers keeps the old generation's copies longer), starting with
    # a major GC (`major_gc_first`: the workers then run no chain of major
    # GCs of their own, docs/COPY_ON_WRITE.md), and sealing malloc's free
    # chunks in every mold, the first one of a reforking server included
    # (`seal_malloc`: its workers' mallocs otherwise land in the holes of
    # shared pages; docs/JOBS.md, "Memory: what to expect").
    # @return [Server::Config]
    def self.config
      config = Server::Config.new
      config.rackup = nil
      config.timeout = false
      config.out_of_band_gc = false
      config.shutdown_timeout = SHUTDOWN_TIMEOUT
      config.heap_nice_default = 0
      config.heap_defaults = {major_gc_first: true, seal_malloc: true}
      config
    end

    # Runs job workers until they are stopped.
    # @param config [Server::Config]
    # @param engine [SidekiqEngine] the job system
    # @return [Integer] exit status
    def self.run(config, engine)
      Cluster::Monitor.new(config, service: Service.new(engine)).run
    end
  end
end
