# frozen_string_literal: true

require_relative "../errors"
require_relative "../cpu"
require_relative "../cluster/hooks"
require_relative "setting"
require_relative "listener"
require_relative "../cluster/out_of_band_gc"
require_relative "warmup"

module Herd
  module Server
    # Everything `herd serve` is told: defaults, then the config file (a Ruby
    # DSL, see docs/CONFIGURATION.md), then command-line flags.
    class Config
      # Where a server listens when nothing says: every interface, as
      # Unicorn and Puma (docs/CONFIGURATION.md, "Which interfaces").
      DEFAULT_LISTEN = "0.0.0.0:8080"
      # The keywords of `http` in the config file.
      HTTP_OPTIONS = %i[max_request_line max_header_count max_header_bytes max_body body_spool_threshold
        read_timeout max_pending_heads keep_alive early_hints].freeze

      # The config file's settings, by name, in the order they are checked.
      # @return [Hash{Symbol => Setting}]
      SETTINGS = {}

      class << self
        # Declares a setting: a reader and writer on Config, its default,
        # its check in {#validate!}, and (unless `dsl: false`) a method of
        # the same name in the config file. Adding a setting is one line
        # here plus its check (SettingChecks has the common ones), a row in
        # docs/CONFIGURATION.md, and a test.
        # @param name [Symbol]
        # @param default [Object, #call] a callable is called for each Config
        # @param check [#call, nil] (name, value); raises ConfigError
        # @param dsl [Boolean] false when the config file's method has
        #   another shape, written by hand in {DSL}
        # @param reader [Boolean] false when Config writes the reader itself
        #   (a default that depends on another setting)
        # @return [void]
        # @api private
        def setting(name, default, check = nil, dsl: true, reader: true)
          SETTINGS[name] = Setting.new(name, default, check)
          reader ? attr_accessor(name) : attr_writer(name)
          DSL.define_method(name) { |value| @config.public_send(:"#{name}=", value) } if dsl
        end
      end

      # The methods a config file may call: one per setting (Config.setting
      # defines them), plus listen, prepare_heap, http and the hooks. The
      # file's reference is docs/CONFIGURATION.md.
      # @api private
      class DSL
        def initialize(config)
          @config = config
        end
      end

      setting :workers, -> { CPU.count }, SettingChecks.whole(0)
      # false: no limit (herd's job workers, whose jobs take their time)
      setting :timeout, 30, SettingChecks.off_or_seconds
      setting :spawn_timeout, 30, SettingChecks.seconds
      setting :shutdown_timeout, 30, SettingChecks.seconds
      setting :refork_after, false, SettingChecks.schedule
      # false, or how many times refork_after's count a refork waits for YJIT to settle (Cluster::JITWatch)
      setting :refork_yjit_wait, false, SettingChecks.off_or_count("times refork_after's count", "4")
      # nil: 0 with a surge, 1 without (#rollout_max_unavailable)
      setting :rollout_max_unavailable, nil, SettingChecks.whole(0), reader: false
      setting :rollout_max_surge, 1, SettingChecks.whole(0)
      setting :rollout_min_ready, 0, SettingChecks.seconds_or_zero
      setting :out_of_band_gc, Cluster::OutOfBandGC::DEFAULT_OBJECTS,
        SettingChecks.off_or_count("allocations", "10_000")
      setting :prepare_heap, true, SettingChecks.heap_options, dsl: false
      # The kernel may merge the server's identical pages (Cluster::KSM).
      setting :ksm, false, SettingChecks.boolean
      setting :rackup, "config.ru"
      setting :access_log, nil
      setting :stdout_path, nil
      setting :stderr_path, nil
      setting :pidfile, nil
      # Requests a fresh mold sends its app before forking workers (a Warmup, or nil).
      setting :warmup, nil, dsl: false
      # The monitor's control endpoint (docs/TELEMETRY.md), and the memory policy.
      setting :control_listen, nil,
        ->(_name, address) { Listener::Spec.new(address: address).validate! if address }, dsl: false
      setting :refork_when, nil, SettingChecks.refork_when, dsl: false
      setting :worker_memory_limit, nil, SettingChecks.memory_limit, dsl: false
      # Job workers beside the web workers (a Jobs::Beside, or nil).
      setting :jobs, nil, dsl: false

      attr_reader :hooks, :listen_specs, :http_options
      # @return [Object, nil] a Rack app given as an object (rackup, rails server) instead of a file
      attr_accessor :app
      # @return [IO] where herd's own log goes
      attr_accessor :log_io
      # @return [Boolean] the monitor as child subreaper (false: plain preload)
      attr_accessor :subreaper
      # @return [#call, nil] builds this config again from its sources (HUP)
      attr_accessor :reloader
      # @return [String, nil] the config file read, for the log
      attr_accessor :config_file
      # @return [Hash{Symbol => String}] which source set :workers and :listen, when not the file or a default
      attr_reader :origins

      def initialize
        SETTINGS.each_value { |setting| public_send(:"#{setting.name}=", setting.default_value) }
        @app = nil
        @log_io = $stderr
        @subreaper = true
        @reloader = nil
        @config_file = nil
        @origins = {}
        @listen_specs = []
        @http_options = {}
        @hooks = Cluster::Hooks.new
        @heap_nice_default = DEFAULT_HEAP_NICE
        @heap_defaults = {}
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

      # The nice value of work nothing waits on during a rollout (a mold's
      # preparation, a surge replacement's warm-up) when `prepare_heap`
      # names none: together with the surge, it keeps a refork's p99 and
      # throughput nearest to steady, where one-out-one-in at the mold's own
      # priority often missed one of the two (docs/REFORKING.md, "Surge:
      # `rollout_max_surge`").
      DEFAULT_HEAP_NICE = 10

      # @return [Integer] the nice value {#heap_nice} falls back to:
      #   {DEFAULT_HEAP_NICE}, or 0 for job workers ({Jobs.config})
      attr_accessor :heap_nice_default

      # @return [Hash] {Heap.prepare} options a mold uses unless
      #   `prepare_heap` sets them: none, or `major_gc_first: true,
      #   seal_malloc: true` for job workers ({Jobs.config})
      attr_accessor :heap_defaults

      # @return [Integer] how many workers a rollout takes out of service at
      #   once: as set, else none when replacements are forked ahead
      #   (`rollout_max_surge`, 1 by default) and one when they are not, so
      #   `rollout_max_surge 0` alone goes back to one-out-one-in
      def rollout_max_unavailable
        return @rollout_max_unavailable unless @rollout_max_unavailable.nil?

        (@rollout_max_surge.is_a?(Integer) && @rollout_max_surge.positive?) ? 0 : 1
      end

      # @return [Integer, nil] `prepare_heap nice:`, the priority of work
      #   nothing waits on during a rollout (a mold's preparation, a surge
      #   replacement's warm-up): {#heap_nice_default} unless set (0: the
      #   process's own priority); nil with `prepare_heap false`
      def heap_nice
        return nil unless @prepare_heap

        (@prepare_heap.is_a?(Hash) && @prepare_heap.key?(:nice)) ? @prepare_heap[:nice] : @heap_nice_default
      end

      # @return [Boolean] whether heap preparation gives the children room
      #   (`prepare_heap room:`, on unless set false), and so whether
      #   workers keep it ({Heap::RoomKeeper})
      def heap_room?
        return false unless @prepare_heap

        options = heap_defaults.merge(@prepare_heap.is_a?(Hash) ? @prepare_heap : {})
        options.fetch(:room, true) ? true : false
      end

      # @return [Integer] every worker the monitor keeps: `workers`, plus the
      #   job workers `jobs` adds after them
      def process_count
        @workers + (@jobs ? @jobs.processes : 0)
      end

      # @return [Array<Listener::Spec>] the listeners to bind (the default when none given)
      def listeners
        if @listen_specs.empty?
          [Listener::Spec.new(address: DEFAULT_LISTEN, tcp_defer_accept: Listener::DEFER_ACCEPT)]
        else
          @listen_specs
        end
      end

      # Adds a listener (the config file's `listen`).
      # @param address [String, Integer] see {DSL#listen}
      # @raise [ConfigError] for an address or option that makes no sense
      # @return [void]
      def add_listener(address, backlog: nil, reuseport: false, umask: nil, tcp_nodelay: true,
        tcp_defer_accept: Listener::DEFER_ACCEPT)
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
      # @return [self]
      def validate!
        SETTINGS.each_value { |setting| setting.validate!(public_send(setting.name)) }
        if rollout_max_unavailable.zero? && @rollout_max_surge.zero?
          raise ConfigError, "rollout_max_unavailable and rollout_max_surge are both 0: a rollout could never " \
            "replace a worker; set rollout_max_surge 1 (replacements first) or rollout_max_unavailable 1"
        end
        # rackup nil: job workers, which serve no Rack app
        if @rackup && @app.nil? && !File.file?(@rackup)
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

      # The config file's methods whose shape is not `name value`.
      class DSL
        # @param address [String, Integer] "host:port", "[::1]:port", port (every interface), or "unix:/path"
        # @param options [Hash] the socket's options
        # @option options [Integer] :backlog listen(2) backlog (default 1024)
        # @option options [Boolean] :reuseport SO_REUSEPORT
        # @option options [Integer] :umask for a UNIX socket's file
        # @option options [Boolean] :tcp_nodelay TCP_NODELAY on accepted sockets (default true)
        # @option options [Integer, false] :tcp_defer_accept TCP_DEFER_ACCEPT seconds (Linux;
        #   default 1, false turns it off): accept(2) returns once the request's first bytes arrived
        def listen(address, **options)
          @config.add_listener(address, **options)
        end

        # true (default), false, or Herd::Heap.prepare options, e.g. {compact: true}
        def prepare_heap(value = true, **options)
          @config.prepare_heap = options.empty? ? value : options
        end

        # GET requests a freshly booted mold (at start, after a HUP reload)
        # sends its app before it forks workers, so that the caches an app
        # fills on its first requests are filled once and shared:
        # `warmup "/", "/posts"`. A promoted mold needs none. Each new
        # worker sends them too before it reports ready, so that its first
        # copy-on-write faults are not on a client's time.
        # @param paths [Array<String>] paths with their query strings
        # @param host [String] the Host header of each request
        # @param workers [Boolean] false: the mold only
        def warmup(*paths, host: "localhost", workers: true)
          @config.warmup = Warmup.new(paths, host: host, workers: workers)
        end

        # The monitor's /stats and /metrics: "unix:/path" (created 0600) or
        # "host:port"; off by default (docs/TELEMETRY.md).
        def control_listen(address)
          @config.control_listen = address
        end

        # Refork when sharing has eroded: shared_below: fraction of the
        # workers' resident pages still shared, uss_above: MiB of their Σ USS.
        def refork_when(**conditions)
          @config.refork_when = conditions
        end

        # Job workers forked from the same mold as the web workers, numbered
        # after them: `jobs :sidekiq, processes: 2, args: %w[-q critical]`
        # (docs/JOBS.md, "Web and jobs from one mold").
        # @param system [Symbol, Object] :sidekiq, :solid_queue, or an engine object
        # @param processes [Integer] how many job workers
        # @param args [Array<String>] the job system's own options
        def jobs(system, processes:, args: [])
          require_relative "../jobs/beside"
          @config.jobs = Jobs::Beside.new(system, processes: processes, args: args)
        end

        # MiB of USS past which a worker finishes its request and is replaced.
        def worker_memory_limit(mib)
          @config.worker_memory_limit = mib
        end

        # HTTP limits: max_request_line, max_header_count, max_header_bytes,
        # max_body, body_spool_threshold, read_timeout, max_pending_heads,
        # keep_alive, early_hints.
        def http(**options)
          unknown = options.keys - HTTP_OPTIONS
          unless unknown.empty?
            raise ConfigError, "http: unknown option #{unknown.join(", ")}; known: #{HTTP_OPTIONS.join(", ")}"
          end

          @config.http_options.update(options)
        end

        Cluster::Hooks::NAMES.each do |name|
          define_method(name) { |&block| @config.hooks.add(name, block) }
        end
      end
    end
  end
end
