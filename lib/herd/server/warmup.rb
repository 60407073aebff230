# frozen_string_literal: true

require_relative "../process_cost"

module Herd
  module Server
    # Requests a fresh mold sends its own app before it prepares its heap,
    # so that what an app builds on its first requests (compiled templates,
    # route and constant caches, memoized settings) is built once, in the
    # mold, and shared by every worker, instead of once per worker
    # (docs/RAILS.md, "What reforking means for a Rails app", has what it
    # saves a Rails app). A promoted mold needs none: the worker it comes
    # from has served real traffic.
    #
    # The requests go to the app object directly (no socket); each env has
    # `herd.warmup` set, so that an app can leave them out of its analytics.
    # A failure is logged and the boot goes on: the workers serve as they
    # would have without it.
    #
    # Each new worker then sends the same requests before it reports ready
    # (`workers: false` to skip): what a request writes in memory shared
    # with the mold, the worker copies page by page on its first requests,
    # and it is better done before any client waits on it (the same
    # section has a refork's p99 with and without it).
    # @api private
    class Warmup
      # @return [Array<String>] paths, each starting with "/"
      attr_reader :paths
      # @return [String] the Host header
      attr_reader :host
      # @return [Boolean] whether each new worker sends them too
      attr_reader :workers

      # @param paths [Array<String>] "/path?query"
      # @param host [String]
      # @param workers [Boolean] each new worker sends them too, before it reports ready
      # @raise [ConfigError] for a path that is not one
      def initialize(paths, host: "localhost", workers: true)
        bad = paths.reject { |path| path.is_a?(String) && path.start_with?("/") }
        unless bad.empty? && !paths.empty?
          raise ConfigError, "warmup takes paths that start with /, e.g. warmup \"/\", \"/posts\"; got #{paths.inspect}"
        end
        unless host.is_a?(String) && !host.empty?
          raise ConfigError, "warmup host: must be a host name, got #{host.inspect}"
        end
        unless [true, false].include?(workers)
          raise ConfigError, "warmup workers: must be true or false, got #{workers.inspect}"
        end

        @paths = paths.map { |path| path.dup.freeze }.freeze
        @host = host.dup.freeze
        @workers = workers
      end

      # @param app [#call]
      # @return [String] what happened, for the log
      def run(app)
        results, cost = ProcessCost.measure { @paths.map { |path| "GET #{path} #{request(app, path)}" } }
        "warm-up: #{results.join(", ")} (#{cost})"
      end

      private

      # @return [String] the status, or what the app raised
      def request(app, path)
        load_mock_request
        env = Rack::MockRequest.env_for(path, "HTTP_HOST" => @host, "REMOTE_ADDR" => "127.0.0.1", "herd.warmup" => true)
        status, _headers, body = app.call(env)
        # The body too: templates that stream render while it is read.
        body.each { |_chunk| } if body.respond_to?(:each)
        status.to_s
      rescue Exception => e # rubocop:disable Lint/RescueException
        # A warm-up never stops the boot; the worker would hit the same.
        "raised #{e.class}: #{e.message.to_s.lines.first.to_s.strip[0, 200]}"
      ensure
        close(body)
      end

      # A body whose close raises must not end the boot either.
      def close(body)
        body.close if body.respond_to?(:close)
      rescue Exception # rubocop:disable Lint/RescueException -- as in #request
        nil
      end

      # Rack 3 has it in its own file, Rack 2.2 in rack/mock.
      def load_mock_request
        require "rack/mock_request"
      rescue LoadError
        require "rack/mock"
      end
    end
  end
end
