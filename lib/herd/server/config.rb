# frozen_string_literal: true

require_relative "../errors"
require_relative "../cpu"
require_relative "hooks"
require_relative "listener"
require_relative "out_of_band_gc"
require_relative "warmup"

module Herd
  module Server
    # Everything `herd serve` is told: defaults, then the config file (a Ruby
    # DSL, see docs/CONFIGURATION.md), then command-line flags.
    class Config
      DEFAULT_LISTEN = "localhost:8080"
      HTTP_OPTIONS = %i[max_request_line max_header_count max_header_bytes max_body body_spool_threshold
        read_timeout max_pending_heads early_hints].freeze

      attr_reader :hooks, :listen_specs, :http_options
      attr_accessor :rackup, :app, :workers, :timeout, :spawn_timeout, :shutdown_timeout, :prepare_heap,
        :access_log, :log_io, :subreaper, :refork_after, :refork_max_unavailable, :out_of_band_gc,
        :stdout_path, :stderr_path, :pidfile
      # @return [Warmup, nil] requests a fresh mold sends its app before forking workers
      attr_accessor :warmup
      # @return [#call, nil] builds this config again from its sources (HUP)
      attr_accessor :reloader
      # @return [String, nil] the config file read, for the log
      attr_accessor :config_file
      # @return [Hash{Symbol => String}] which source set :workers and :listen, when not the file or a default
      attr_reader :origins

      def initialize
        @rackup = "config.ru"
        @app = nil
        @workers = CPU.count
        @timeout = 30
        @spawn_timeout = 30
        @shutdown_timeout = 30
        @prepare_heap = true
        @access_log = nil
        @log_io = $stderr
        @subreaper = true
        @refork_after = false
        @refork_max_unavailable = 1
        @out_of_band_gc = OutOfBandGC::DEFAULT_OBJECTS
        @stdout_path = nil
        @stderr_path = nil
        @pidfile = nil
        @warmup = nil
        @reloader = nil
        @config_file = nil
        @origins = {}
        @listen_specs = []
        @http_options = {}
        @hooks = Hooks.new
      end

      # Reads a config file.
      # @raise [ConfigError]
      def load_file(path)
        DSL.new(self).instance_eval(File.read(path), path, 1)
        self
      rescue Errno::ENOENT, Errno::EACCES => e
        raise ConfigError, "cannot read config file #{path}: #{e.message}"
      rescue ConfigError
        raise
      rescue NoMethodError => e
        raise unknown_setting(e, path) if e.receiver.is_a?(DSL)

        raise ConfigError, "config file #{where(e, path)}: #{e.class}: #{e.message}"
      rescue ScriptError, StandardError => e
        raise ConfigError, "config file #{where(e, path)}: #{e.class}: #{e.message}"
      end

      # @return [Array<Listener::Spec>] the listeners to bind (the default when none given)
      def listeners
        @listen_specs.empty? ? [Listener::Spec.new(address: DEFAULT_LISTEN)] : @listen_specs
      end

      def add_listener(address, backlog: nil, reuseport: false, umask: nil, tcp_nodelay: true, tcp_defer_accept: false)
        spec = Listener::Spec.new(address: address.to_s, backlog: backlog, reuseport: reuseport, umask: umask,
          tcp_nodelay: tcp_nodelay, tcp_defer_accept: tcp_defer_accept)
        spec.validate!
        @listen_specs << spec
      end

      # A source that wins over the file replaces its listeners (a flag or
      # PORT never adds a second address).
      # @param addresses [Array<String>]
      def replace_listeners(addresses)
        @listen_specs = []
        addresses.each { |address| add_listener(address) }
      end

      # @return [String] where the settings came from, for the monitor's log
      def describe_origins
        parts = [@config_file ? "config file #{@config_file}" : "no config file"]
        parts << "workers from #{@origins[:workers]}" if @origins[:workers]
        parts << "listeners from #{@origins[:listen]}" if @origins[:listen]
        parts.join(", ")
      end

      # @raise [ConfigError] unless every value makes sense
      def validate!
        whole(:workers, @workers, 0)
        %i[timeout spawn_timeout shutdown_timeout].each { |name| positive(name, public_send(name)) }
        schedule = @refork_after.is_a?(Array) && !@refork_after.empty? && @refork_after.all? { |n| n.is_a?(Integer) && n.positive? }
        unless @refork_after == false || schedule
          raise ConfigError, "refork_after must be false or a list of request counts > 0, e.g. [50, 100, 1000]; got #{@refork_after.inspect}"
        end
        whole(:refork_max_unavailable, @refork_max_unavailable, 1)
        budget = @out_of_band_gc == false || (@out_of_band_gc.is_a?(Integer) && @out_of_band_gc.positive?)
        unless budget
          raise ConfigError, "out_of_band_gc must be false or a number of allocations > 0, e.g. 100_000; got #{@out_of_band_gc.inspect}"
        end
        validate_prepare_heap
        if @app.nil? && !File.file?(@rackup)
          raise ConfigError, "no Rack app file at #{File.expand_path(@rackup)}; pass one: herd serve path/to/config.ru"
        end
        # Checked here, once, rather than by every worker in a crash loop
        # (only the options: the monitor never loads the HTTP layer itself).
        require "herd/http/options"
        HTTP::Options.new(**@http_options)
        self
      end

      private

      # "path:line", the line of the config file where `error` was raised
      def where(error, path)
        line = error.backtrace_locations&.find { |location| location.path == path }&.lineno
        line ? "#{path}:#{line}" : path
      end

      # A typo names the setting and its line, not the whole Config object.
      def unknown_setting(error, path)
        settings = DSL.public_instance_methods(false).map(&:to_s)
        require "did_you_mean"
        guess = DidYouMean::SpellChecker.new(dictionary: settings).correct(error.name.to_s).first
        ConfigError.new("unknown setting `#{error.name}` (#{where(error, path)})" \
          "#{guess ? "; did you mean `#{guess}`?" : "; see docs/CONFIGURATION.md"}")
      rescue LoadError
        ConfigError.new("unknown setting `#{error.name}` (#{where(error, path)}); see docs/CONFIGURATION.md")
      end

      def validate_prepare_heap
        return if [true, false].include?(@prepare_heap)
        raise ConfigError, "prepare_heap: true, false or a Hash of Herd::Heap.prepare options" unless @prepare_heap.is_a?(Hash)

        require_relative "../heap"
        unknown = @prepare_heap.keys - Heap::OPTIONS
        return if unknown.empty?

        raise ConfigError, "prepare_heap: unknown option#{"s" if unknown.size > 1} #{unknown.join(", ")}; " \
          "known: #{Heap::OPTIONS.join(", ")}"
      end

      def whole(name, value, min)
        return if value.is_a?(Integer) && value >= min

        raise ConfigError, "#{name} must be a whole number >= #{min}, got #{value.inspect}"
      end

      def positive(name, value)
        return if value.is_a?(Numeric) && value.positive?

        raise ConfigError, "#{name} must be a number of seconds > 0, got #{value.inspect}"
      end

      # The methods a config file may call.
      class DSL
        def initialize(config)
          @config = config
        end

        # @param count [Integer] worker processes
        def workers(count)
          @config.workers = count
        end

        # @param address [String, Integer] "host:port", "[::1]:port", port, or "unix:/path"
        # @param backlog [Integer] listen(2) backlog (default 1024)
        # @param reuseport [Boolean] SO_REUSEPORT
        # @param umask [Integer] for a UNIX socket's file
        # @param tcp_nodelay [Boolean] TCP_NODELAY on accepted sockets (default true)
        # @param tcp_defer_accept [Integer, false] TCP_DEFER_ACCEPT seconds (Linux; default off): accept(2) returns once the request's first bytes arrived
        def listen(address, **options)
          @config.add_listener(address, **options)
        end

        # Seconds one request may take before the monitor SIGKILLs its worker.
        def timeout(seconds)
          @config.timeout = seconds
        end

        # Seconds a new mold or worker may take to say it is ready.
        def spawn_timeout(seconds)
          @config.spawn_timeout = seconds
        end

        # Seconds a graceful stop (QUIT/TERM) waits for in-flight requests.
        def shutdown_timeout(seconds)
          @config.shutdown_timeout = seconds
        end

        # Refork after these request counts per generation (the last repeats),
        # counted on the busiest worker; false (the default) for USR2 only.
        def refork_after(counts)
          @config.refork_after = counts
        end

        # How many workers a refork may replace at once (default 1).
        def refork_max_unavailable(count)
          @config.refork_max_unavailable = count
        end

        # A worker runs a minor GC between requests once it has allocated
        # this many objects since its last GC, unless Ruby's own is due
        # sooner (default 100_000); false leaves GC timing to Ruby alone.
        # See Herd::Server::OutOfBandGC.
        def out_of_band_gc(objects)
          @config.out_of_band_gc = objects
        end

        # The Rack app file (default config.ru).
        def rackup(path)
          @config.rackup = path
        end

        # true (default), false, or Herd::Heap.prepare options, e.g. {compact: true}
        def prepare_heap(value = true, **options)
          @config.prepare_heap = options.empty? ? value : options
        end

        # An access log: a path, an IO, or nil for none (the default).
        def access_log(target)
          @config.access_log = target
        end

        # Where stdout goes: a file opened for append, reopened on USR1
        # (logrotate). Default: wherever herd's stdout already goes.
        def stdout_path(path)
          @config.stdout_path = path
        end

        # Where stderr goes, herd's own log included; reopened on USR1.
        def stderr_path(path)
          @config.stderr_path = path
        end

        # A file the monitor writes its pid to (and removes when it stops),
        # for `kill -USR1 $(cat FILE)` from logrotate or a deploy script.
        def pidfile(path)
          @config.pidfile = path
        end

        # GET requests a freshly booted mold (at start, after a HUP reload)
        # sends its app before it forks workers, so that the caches an app
        # fills on its first requests are filled once and shared:
        # `warmup "/", "/posts"`. A promoted mold needs none.
        # @param paths [Array<String>] paths with their query strings
        # @param host [String] the Host header of each request
        def warmup(*paths, host: "localhost")
          @config.warmup = Warmup.new(paths, host: host)
        end

        # HTTP limits: max_request_line, max_header_count, max_header_bytes,
        # max_body, body_spool_threshold, read_timeout, max_pending_heads, early_hints.
        def http(**options)
          unknown = options.keys - HTTP_OPTIONS
          raise ConfigError, "http: unknown option #{unknown.join(", ")}; known: #{HTTP_OPTIONS.join(", ")}" unless unknown.empty?

          @config.http_options.update(options)
        end

        Hooks::NAMES.each do |name|
          define_method(name) { |&block| @config.hooks.add(name, block) }
        end
      end
    end
  end
end
