# frozen_string_literal: true

require_relative "../memory_policy"
require_relative "part"

module Herd
  module Cluster
    class Monitor
      # The monitor's instruments: the memory sampler (a thread measuring the
      # tree every second), the control endpoint (`control_listen`: /stats
      # and /metrics, served from the monitor's loop), and the memory policy
      # they feed (`refork_when`, `worker_memory_limit`), carried out in the
      # monitor's loop. Nothing runs unless one of those settings asks for it.
      # @api private
      class Instruments
        include Part

        def initialize(context:, plan:, children:, workload:, telemetry:, rollout:, recovery:)
          @context = context
          @plan = plan
          @children = children
          @workload = workload
          @telemetry = telemetry
          @rollout = rollout
          @recovery = recovery
        end

        def start
          @memory_policy = memory_policy
          start_sampler if config.control_listen || @memory_policy.active?
          start_control if config.control_listen
        end

        def stop
          @control&.close
          @sampler&.stop
        end

        # @return [String, nil] "control=ADDRESS" for the process title, where `herd top --pidfile` finds it
        def title
          "control=#{@control.address}" if @control
        end

        # @return [Array<IO>] the monitor's own descriptors, closed in every child
        def ios
          @control ? @control.ios : []
        end

        # @return [Array<IO>] what the monitor's IO.select watches for reading
        def read_ios
          @control ? @control.read_ios : []
        end

        # @return [Array<IO>] what the monitor's IO.select watches for writing
        def write_ios
          @control ? @control.write_ios : []
        end

        # @return [Boolean] whether `io` is the control endpoint's
        def owns?(io)
          @control&.owns?(io) || false
        end

        # Whatever the monitor's loop found ready on the control endpoint's side.
        def serve(readable, writable)
          return unless @control

          (Array(readable) + Array(writable)).each { |io| @control.ready(io) if @control.owns?(io) }
          @control.expire
        end

        # Acts once per new measurement. (A reload may have turned the policy
        # on: the sampler starts then.)
        def apply_memory_policy
          @memory_policy = memory_policy
          start_sampler if @sampler.nil? && @memory_policy.active?
          report = @sampler&.latest
          return if report.nil? || report.equal?(@applied_report)

          @applied_report = report
          replace_workers_over_limit(report)
          refork_for_memory(report)
        end

        private

        def start_sampler
          require_relative "../memory_sampler"
          @sampler = MemorySampler.new(Process.pid, log: ->(message) { log(message) }).start
        end

        def start_control
          require_relative "../control_server"
          require_relative "../metrics"
          require_relative "../stats"
          @stats = Stats.new(monitor_pid: Process.pid, children: @children, workload: @workload, telemetry: @telemetry,
            sampler: @sampler, server: -> { server_state })
          @control = ControlServer.open(config.control_listen, render: ->(path) { render_control(path) },
            on_error: ->(error) { log("control: #{error.class}: #{error.message}") })
          log("control endpoint on #{@control.address} (GET /stats, GET /metrics)")
        end

        def render_control(path)
          stats = @stats.to_h
          (path == "/metrics") ? Metrics.new(stats).to_s : JSONWriter.generate(stats)
        end

        def server_state
          {generation: @rollout.generation, workers_target: @plan.target, state: @plan.to_s,
           settings: {refork_after: config.refork_after, refork_when: config.refork_when,
                      worker_memory_limit: config.worker_memory_limit}}
        end

        # A reload may change the settings: the policy follows the config.
        def memory_policy
          settings = [config.refork_when, config.worker_memory_limit]
          return @memory_policy if @memory_policy && settings == @memory_policy_settings

          @memory_policy_settings = settings
          MemoryPolicy.new(refork_when: settings[0], worker_memory_limit: settings[1])
        end

        def replace_workers_over_limit(report)
          ready = measured(report, @children.workers.select(&:ready?))
          @memory_policy.over_limit(ready).each do |measured|
            child = measured.child
            how = @rollout.replace(child, spawn: @recovery.workers_due?) or next

            @telemetry.count(:memory_limit_replacements)
            log("#{child}: USS #{MemoryPolicy.mib(measured.sample.uss)} is over worker_memory_limit " \
              "#{config.worker_memory_limit} MiB; " +
              ((how == :surge) ?
                "its replacement is forked first, then it finishes its request and exits" :
                "it finishes its request and is replaced"))
          end
        end

        # Only a generation fully rolled out, every worker measured: a half
        # rolled-out one mixes fresh and old workers.
        def refork_for_memory(report)
          return unless @rollout.refork_due?

          workers = @children.workers
          current = workers.select { |child| child.generation == @rollout.generation }
          return if current.size != workers.size || current.size < @plan.target || !current.all?(&:ready?)

          sampled = measured(report, current)
          return if sampled.size != current.size

          reason = @memory_policy.refork_reason(@rollout.generation, sampled) { |note| log(note) }
          @rollout.refork("refork_when: #{reason}") if reason
        end

        def measured(report, children)
          rows = report.rows.to_h { |row| [row.pid, row.sample] }
          children.filter_map { |child| (sample = rows[child.pid]) && MemoryPolicy::Measured.new(child, sample) }
        end
      end
    end
  end
end
