# frozen_string_literal: true

require_relative "../errors"
require_relative "tally"

module Herd
  module Jobs
    # Sidekiq as the job system of herd's job workers (`herd sidekiq`).
    # The mold reads Sidekiq's configuration as the `sidekiq` command does
    # (Sidekiq::CLI#parse: its flags and config/sidekiq.yml) and loads the
    # app with Sidekiq in server mode; each worker runs its own
    # Sidekiq::Launcher, whose heartbeat herd's main thread beats. Sidekiq
    # installs no signal handler here: the worker's are herd's.
    # docs/JOBS.md tells the whole story; docs/research/job-systems.md
    # the Sidekiq internals this relies on.
    # @api private
    class SidekiqEngine
      # Seconds between two heartbeats, as Sidekiq's own thread beats.
      BEAT_EVERY = 10

      # @return [Tally] the jobs of this process
      attr_reader :tally

      # @param argv [Array<String>] the `sidekiq` command's flags (-C, -r, -q, -c, -t, -g, -e)
      def initialize(argv)
        @argv = argv
        @tally = Tally.new
      end

      # @return [String] for the monitor's "ready" line
      def to_s
        "Sidekiq"
      end

      # In the first mold: Sidekiq's configuration and the app.
      # @return [String] what was loaded, for the log
      # @raise [JobsError]
      def boot
        load_sidekiq
        @cli = ::Sidekiq::CLI.instance
        parse
        @config = @cli.config
        boot_app
        @config.server_middleware { |chain| chain.add(TallyMiddleware, @tally) }
        # Sidekiq fires each lifecycle event once and empties its list: the
        # workers of every generation need the app's hooks as registered.
        @events = @config[:lifecycle_events].transform_values(&:dup)
        @labels = @config[:labels].to_a
        check_redis
        describe
      end

      # In a worker: Sidekiq's threads start fetching and running jobs.
      # @param info [Cluster::WorkerInfo] shown in Sidekiq's Web UI among the process's labels
      def start(info)
        forget_parent unless @pid == Process.pid
        @config[:lifecycle_events].each { |event, hooks| hooks.replace(@events.fetch(event, [])) }
        @config[:labels].replace(@labels + ["herd worker #{info.number} gen #{info.generation}"])
        @launcher = ::Sidekiq::Launcher.new(@config, embedded: false)
        @launcher.fire_event(:startup, reverse: false, reraise: true)
        @launcher.run(async_beat: false)
        @beat_at = nil
        beat
      end

      # From the worker's main thread: the heartbeat that shows the process
      # in Sidekiq's Web UI and picks up its Quiet and Stop buttons (they
      # come back as TSTP and TERM to this process).
      def beat
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return if @launcher.nil? || (@beat_at && now - @beat_at < BEAT_EVERY)

        @beat_at = now
        @launcher.heartbeat
      end

      # Seconds Sidekiq's stop may take: its `timeout`, its manager's pause,
      # the 3 s it waits for the threads it interrupts, and a margin.
      # @return [Integer]
      def stop_seconds
        @config[:timeout].ceil + 5
      end

      # @return [Boolean] Sidekiq replaces a processor thread that dies by itself
      def alive?
        true
      end

      # No new job; those in hand finish.
      def quiet
        @launcher&.quiet
      end

      # Sidekiq's own stop: fetching stops, the jobs in hand get Sidekiq's
      # `timeout` to finish, and those still running then go back to Redis.
      def stop
        @launcher&.stop
        @launcher = nil
      end

      # In a new mold forked from a worker: none of its Sidekiq state is the mold's.
      def leave
        @launcher = nil
        forget_parent
      end

      private

      def load_sidekiq
        require "sidekiq"
        # Before the app: Sidekiq.server? is true while it loads, so its
        # configure_server blocks run, as under the `sidekiq` command.
        require "sidekiq/cli"
      rescue LoadError => e
        raise JobsError, "herd sidekiq: cannot load Sidekiq (#{e.message}); add `gem \"sidekiq\"` to the " \
          "app's Gemfile and run herd with `bundle exec`"
      end

      def parse
        @cli.parse(@argv.dup)
      rescue SystemExit
        raise JobsError, "herd sidekiq: no app to load in #{Dir.pwd}; run it in a Rails app's directory " \
          "or pass the job classes' file: herd sidekiq -- -r ./jobs.rb"
      rescue OptionParser::ParseError, ArgumentError => e
        raise JobsError, "herd sidekiq: Sidekiq refused its options (#{e.message}); they go after --, " \
          "as the sidekiq command takes them"
      end

      # Sidekiq's own boot, the one its CLI#run starts with (private, and
      # not the same in 7.3 and 8): a Rails app through its
      # config/environment.rb with Sidekiq's Railtie, else the -r file.
      def boot_app
        unless @cli.respond_to?(:boot_application, true)
          raise JobsError, "herd sidekiq: Sidekiq #{::Sidekiq::VERSION} has no CLI#boot_application; " \
            "herd runs Sidekiq 7.3 and 8"
        end

        @cli.send(:boot_application)
      end

      # The Redis check of Sidekiq::CLI#run, once, in the mold: a worker
      # would otherwise fail on its first fetch, one after the other.
      def check_redis
        version = Gem::Version.new(@config.redis_info.fetch("redis_version", "0"))
        needed = Gem::Version.new((Gem::Version.new(::Sidekiq::VERSION) >= Gem::Version.new("8")) ? "7.0.0" : "6.2.0")
        return if version >= needed

        raise JobsError, "herd sidekiq: Redis #{version} is too old for Sidekiq #{::Sidekiq::VERSION} " \
          "(it needs #{needed} or newer)"
      rescue ::RedisClient::Error => e
        raise JobsError, "herd sidekiq: cannot reach Redis (#{e.message}); start it, or set REDIS_URL"
      end

      def describe
        capsules = @config.capsules.values.map { |capsule| "#{capsule.queues.join(",")} x#{capsule.concurrency}" }
        "Sidekiq #{::Sidekiq::VERSION}: queues #{capsules.join("; ")} (threads), timeout #{@config[:timeout]} s"
      end

      # What Sidekiq keeps per process and never resets across a fork: a
      # child would heartbeat under its parent's identity (one process in
      # the Web UI), and count its parent's jobs again.
      def forget_parent
        @pid = Process.pid
        component = ::Sidekiq::Component
        %i[@@identity @@process_nonce].each do |name|
          component.class_variable_set(name, nil) if component.class_variable_defined?(name)
        end
        ::Sidekiq::Processor::WORK_STATE.clear
        ::Sidekiq::Processor::PROCESSED.reset
        ::Sidekiq::Processor::FAILURE.reset
        @tally.reset
      end

      # Counts each job for the worker's report: its class (the Active Job
      # class for a wrapped job), from its start to its end.
      # @api private
      class TallyMiddleware
        def initialize(tally)
          @tally = tally
        end

        def call(_job, job_hash, _queue)
          @tally.start((job_hash["wrapped"] || job_hash["class"]).to_s)
          yield
        ensure
          @tally.finish
        end
      end
    end
  end
end
