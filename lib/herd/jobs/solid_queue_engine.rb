# frozen_string_literal: true

require "optparse"
require "socket"
require_relative "../errors"
require_relative "tally"
require_relative "../pid"

module Herd
  module Jobs
    # Solid Queue as the job system of herd's job workers (`herd
    # solid_queue`). The mold loads the Rails app and reads the processes
    # config/queue.yml declares, as `bin/jobs` does. Herd worker N runs the
    # Nth of its workers (round the list), and worker 0 also runs the
    # dispatchers and the scheduler, so that any number of herd workers
    # runs every kind. Each runs in Solid Queue's async mode: a thread, with
    # no signal handler and no fork of its own, and a process row of its
    # own. herd does the supervisor's part: the rows of this server's
    # processes that died without deregistering (SIGKILL, the OOM killer)
    # are pruned at once, their claimed jobs failed as Solid Queue's own
    # pruning fails them. docs/JOBS.md tells the whole story.
    # @api private
    class SolidQueueEngine
      # Seconds between two looks for processes of this server that died.
      PRUNE_EVERY = 30
      # The metadata key that marks a process row as one of this server's.
      MONITOR_KEY = "herd_monitor"

      # @return [Tally]
      attr_reader :tally

      # @param argv [Array<String>] `bin/jobs`'s options: -c,
      #   --recurring_schedule_file, --skip_recurring, --only_recurring
      def initialize(argv)
        @options = parse(argv)
        @tally = Tally.new
      end

      def to_s
        "Solid Queue"
      end

      # In the first mold: the app, its Solid Queue configuration, and the
      # tally of jobs (Active Job's notifications, emitted in the job's thread).
      # @return [String] what was loaded, for the log
      # @raise [JobsError]
      def boot
        boot_app
        configuration = ::SolidQueue::Configuration.new(mode: :fork, **@options)
        unless configuration.valid?
          raise JobsError, "herd solid_queue: Solid Queue's configuration is invalid: " \
            "#{configuration.errors.full_messages.join("; ").tr("\n", " ")}"
        end

        @workers, @singletons = configuration.configured_processes.partition { |process| process.kind.to_s == "worker" }
        count_jobs
        describe(configuration)
      end

      # Seconds Solid Queue's stop may take: its shutdown_timeout, then deregistering.
      # @return [Integer]
      def stop_seconds
        ::SolidQueue.shutdown_timeout.to_i + 5
      end

      # @return [Array<String>] the workers of the configuration, one per herd worker at least
      def plan
        @workers.map { |process| "worker (#{process.attributes[:queues]})" }
      end

      # In a worker: its processes of queue.yml start, each in a thread.
      # @param info [Cluster::WorkerInfo]
      def start(info)
        forget_parent unless @pid == Process.pid
        prune_the_dead
        label = {"herd" => "herd worker #{info.number} gen #{info.generation}", MONITOR_KEY => Process.ppid}
        @processes = entries(info.number).map do |entry|
          entry.instantiate.tap do |process|
            process.extend(Labelled)
            process.herd_label = label
            process.mode = :async
          end
        end
        @processes.each(&:start)
        @quiet = false
      end

      # From the worker's main thread, now and then: the processes of this
      # server that died are pruned (their rows, their claimed jobs).
      def beat
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return if @pruned_at && now - @pruned_at < PRUNE_EVERY

        prune_the_dead
      end

      # @return [Boolean] false once Solid Queue's thread ended by itself
      #   (its row was pruned by another process, an unrecoverable error)
      def alive?
        @quiet || @processes.nil? || @processes.all?(&:alive?)
      end

      # Solid Queue has no quiet state: its stop is the nearest (no new
      # job, those in hand finish, the row goes).
      def quiet
        @quiet = true
        stop
      end

      # Solid Queue's own stop: no new claim, the jobs in hand get
      # SolidQueue.shutdown_timeout, and deregistering gives any claim still
      # held back to the queue.
      def stop
        @processes&.each(&:stop)
        @processes = nil
      end

      # In a new mold forked from a worker: no process of its own.
      def leave
        forget_parent
      end

      # Adds herd's label and the monitor's pid to a process's row.
      # @api private
      module Labelled
        attr_writer :herd_label

        def metadata
          super.merge(@herd_label || {})
        end
      end

      private

      def parse(argv)
        options = {}
        OptionParser.new do |opts|
          opts.on("-c", "--config_file PATH", "--config-file PATH") { |path| options[:config_file] = path }
          opts.on("--recurring_schedule_file PATH", "--recurring-schedule-file PATH") do |path|
            options[:recurring_schedule_file] = path
          end
          opts.on("--skip_recurring", "--skip-recurring") { options[:skip_recurring] = true }
          opts.on("--only_recurring", "--only-recurring") { options[:only_recurring] = true }
        end.parse!(argv.dup).then do |rest|
          raise UsageError, "solid_queue: unexpected #{rest.join(" ")}" unless rest.empty?
        end
        options
      rescue OptionParser::ParseError => e
        raise UsageError, "solid_queue: #{e.message} (Solid Queue's options: -c FILE, " \
          "--recurring_schedule_file FILE, --skip_recurring, --only_recurring)"
      end

      def boot_app
        environment = File.expand_path("config/environment.rb")
        unless File.file?(environment)
          raise JobsError, "herd solid_queue: no Rails app in #{Dir.pwd} (config/environment.rb); " \
            "run it in the app's directory"
        end

        require environment
        return if defined?(::SolidQueue::Configuration)

        raise JobsError, "herd solid_queue: Solid Queue is not loaded; add `gem \"solid_queue\"` to the app's Gemfile"
      end

      # Worker 0 runs the singletons too: TTOU never retires them.
      def entries(number)
        worker = @workers.empty? ? [] : [@workers[number % @workers.size]]
        number.zero? ? @singletons + worker : worker
      end

      def count_jobs
        tally = @tally
        ::ActiveSupport::Notifications.subscribe("perform_start.active_job") do |*, payload|
          tally.start(payload[:job].class.name)
        end
        ::ActiveSupport::Notifications.subscribe("perform.active_job") { tally.finish }
      end

      def describe(configuration)
        warnings = configuration.warnings.full_messages
        singletons = @singletons.map { |process| process.kind.to_s }
        "Solid Queue #{::SolidQueue::VERSION}: herd worker N runs the Nth of #{plan.join(", ")} (round the list)" \
          "#{", worker 0 also #{singletons.join(", ")}" unless singletons.empty?}" \
          "#{"; #{warnings.join("; ")}" unless warnings.empty?}"
      end

      # Rows of this server's processes (same host, same monitor) whose pid
      # is gone: pruned as Solid Queue prunes a process whose heartbeat
      # stopped, at once instead of after process_alive_threshold.
      def prune_the_dead
        @pruned_at = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        host = Socket.gethostname
        monitor = Process.ppid
        ::SolidQueue::Process.where(hostname: host).where.not(pid: Process.pid).each do |row|
          next unless row.metadata[MONITOR_KEY] == monitor && !Pid.alive?(row.pid)

          row.prune
        end
      rescue => e
        warn "herd solid_queue: pruning the rows of dead processes failed (#{e.class}: #{e.message}); " \
          "Solid Queue's own pruning will do it later"
      end

      def forget_parent
        @pid = Process.pid
        @processes = nil
        @tally.reset
      end
    end
  end
end
