# frozen_string_literal: true

require_relative "listener"
require_relative "../cluster/systemd"
require_relative "app_loader"
require_relative "../cluster/connection_release"
require_relative "rack_autoloads"
require_relative "request_loop"

module Herd
  module Server
    # What the workers of `herd serve` do: serve a Rack app over HTTP. The
    # process model (monitor, mold, workers, reforking) asks its service for
    # what is particular to the work: the sockets every process keeps, the
    # app the mold loads and warms up, and each worker's loop.
    # @api private
    class Service
      # @return [Array<Listener>] bound by the monitor, inherited by every child
      attr_reader :listeners

      def initialize
        @listeners = []
      end

      # In the monitor: binds the listeners (or takes systemd's).
      # @param log [Cluster::Log]
      # @param role [String]
      def open(config, log, role)
        fds = Cluster::Systemd.listen_fds
        @listeners = if fds.empty?
          config.listeners.map { |spec| Listener.bind(spec) }
        else
          fds.map { |fd| Listener.inherit(fd) }
        end
        how = fds.empty? ? "listening on" : "listening (systemd socket) on"
        @listeners.each { |listener| log.info(role, "#{how} #{listener}#{listener.reach}") }
      end

      # @return [Array<IO>] the descriptors every child of the server keeps
      def ios
        @listeners.map(&:socket)
      end

      # @return [String] what the workers serve, for the monitor's "ready" line
      def to_s
        "serving #{@listeners.join(", ")}"
      end

      # A HUP reload keeps the sockets it has: it only says what a restart would change.
      # @return [String, nil]
      def kept_on_reload(fresh_config, config)
        return if fresh_config.listeners.map(&:address) == config.listeners.map(&:address)

        "listeners changed in the config file; keeping #{@listeners.join(", ")} (a restart binds new ones)"
      end

      # In a fresh mold: the Rack app.
      # @return [#call]
      def load_app(config, log, role)
        app = AppLoader.load(config)
        log.info(role, HTTP::HeadScanner.describe)
        app
      end

      # In a fresh mold, before its heap is prepared: what the first
      # requests build is built once, here (see Warmup). Rack's autoloads
      # come first: on Ruby 3.1 loading code invalidates the constant caches
      # the warm-up fills (RackAutoloads). The warm-up's database
      # connections must not be inherited by every worker (ConnectionRelease).
      def warm_up_mold(app, config, log, role)
        loaded = RackAutoloads.load
        log.info(role, loaded) if loaded
        warmup = config.warmup
        return unless warmup

        log.info(role, warmup.run(app))
        released = Cluster::ConnectionRelease.release
        log.info(role, "after the warm-up: #{released}") if released
      end

      # In a worker: the loop that serves its connections.
      # @param worker [Cluster::Worker]
      # @return [RequestLoop]
      def worker_loop(worker, app, context)
        RequestLoop.new(worker, app, @listeners, context)
      end

      # Every worker serves HTTP: TERM and INT end one at once (Unicorn's
      # and Puma's way), QUIT is graceful, and `timeout` applies.
      # @return [false]
      def job_worker?(_number, _config)
        false
      end

      # In the monitor, as it stops.
      def close
        @listeners.each(&:close)
      end
    end
  end
end
