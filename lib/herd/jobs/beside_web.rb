# frozen_string_literal: true

require_relative "job_loop"
require_relative "service"

module Herd
  module Jobs
    # `herd serve` with `jobs` in its config file: one mold loads the app
    # and the job system, the first `workers` workers serve HTTP and the
    # ones after them run jobs. Rollouts and reloads roll both, since both
    # come from the same mold. The HTTP service keeps the sockets; a job
    # worker inherits them and never accepts on them.
    # @api private
    class BesideWeb
      # @param web [Server::Service]
      # @param jobs [Service] the job workers' service
      def initialize(web, jobs)
        @web = web
        @jobs = jobs
      end

      def open(config, log, role)
        @web.open(config, log, role)
        @jobs.open(config, log, role)
      end

      def ios
        @web.ios
      end

      def to_s
        "#{@web}, and #{@jobs}"
      end

      def kept_on_reload(fresh_config, config)
        @web.kept_on_reload(fresh_config, config)
      end

      # In a fresh mold: the job system first (Sidekiq must be loaded
      # before the app to run its configure_server blocks), then the Rack app.
      def load_app(config, log, role)
        @engine = @jobs.load_app(config, log, role)
        @web.load_app(config, log, role)
      end

      # The web's warm-up, then what both leave open closed (Service#warm_up_mold).
      def warm_up_mold(app, config, log, role)
        @web.warm_up_mold(app, config, log, role)
        @jobs.warm_up_mold(@engine, config, log, role)
      end

      def worker_loop(worker, app, context)
        return @web.worker_loop(worker, app, context) unless job_worker?(worker.info.number, context.config)

        @jobs.worker_loop(worker, @engine, context)
      end

      # The workers numbered from `workers` on run jobs.
      def job_worker?(number, config)
        number >= config.workers
      end

      def close
        @web.close
        @jobs.close
      end
    end
  end
end
