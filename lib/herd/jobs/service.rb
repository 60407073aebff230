# frozen_string_literal: true

require_relative "../cluster/connection_release"
require_relative "../cluster/lean_monitor"
require_relative "job_loop"

module Herd
  module Jobs
    # What the workers of `herd sidekiq` do: run a job system's jobs. The
    # process model (monitor, mold, workers, reforking) asks its service
    # for what is particular to the work, as it asks Server::Service for
    # `herd serve`; here there is no socket to open, and the worker's loop
    # is a {JobLoop} around the job system's engine.
    # @api private
    class Service
      # @param engine [SidekiqEngine, SolidQueueEngine] the job system
      def initialize(engine)
        @engine = engine
      end

      # In the monitor: job workers take their work from the job system's
      # store (Redis, the database), so there is nothing to bind.
      def open(_config, log, role)
        log.info(role, "job workers: #{@engine}")
      end

      # @return [Array<IO>] none
      def ios
        []
      end

      # @return [String] for the monitor's "ready" line
      def to_s
        "running #{@engine} jobs"
      end

      # Nothing is bound, so nothing is kept across a HUP reload.
      # @return [nil]
      def kept_on_reload(_fresh_config, _config)
        nil
      end

      # In a fresh mold: the job system's configuration and the app.
      # @return [SidekiqEngine] what the workers run
      def load_app(config, log, role)
        # RubyGems and Bundler, which the monitor went without, and herd's
        # public API (the app's fork-safety calls), as AppLoader loads them.
        Cluster::LeanMonitor.restore!
        require "herd"
        log.info(role, @engine.boot)
        warn_about_shutdown(config, log, role)
        warn_about_plan(config, log, role) if @engine.respond_to?(:plan)
        @engine
      end

      # A stop cut short by the monitor's SIGKILL loses the jobs in hand
      # instead of handing them back to the job system.
      def warn_about_shutdown(config, log, role)
        needed = @engine.stop_seconds
        return if config.shutdown_timeout >= needed

        log.info(role, "warning: shutdown_timeout #{config.shutdown_timeout}s is shorter than #{@engine}'s own " \
          "stop (#{needed}s); jobs still running at a stop would be lost, not requeued: set shutdown_timeout #{needed}")
      end

      # A job system whose configuration declares several workers (Solid
      # Queue's queue.yml): fewer herd workers than that leave some out.
      def warn_about_plan(config, log, role)
        plan = @engine.plan
        return if config.workers >= plan.size

        log.info(role, "warning: #{@engine}'s configuration declares #{plan.size} workers (#{plan.join(", ")}); " \
          "#{config.workers} herd worker(s) run only the first #{config.workers}: " \
          "set workers #{plan.size} (-w #{plan.size})")
      end

      # In a fresh mold, before its heap is prepared: the database
      # connections the app opened while it loaded must not be inherited
      # by every worker.
      def warm_up_mold(_engine, _config, log, role)
        released = Cluster::ConnectionRelease.release
        log.info(role, "after loading: #{released}") if released
      end

      # In a worker.
      # @param worker [Cluster::Worker]
      # @return [JobLoop]
      def worker_loop(worker, engine, _context)
        JobLoop.new(worker, engine)
      end

      # Every worker runs jobs: TERM and INT stop it gracefully (as they
      # stop Sidekiq's and Solid Queue's processes), TSTP quiets it, and
      # no `timeout` applies to its jobs.
      # @return [true]
      def job_worker?(_number, _config)
        true
      end

      # In the monitor, as it stops: nothing was opened.
      def close
      end
    end
  end
end
