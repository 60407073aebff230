# frozen_string_literal: true

require_relative "../clock"
require_relative "monitor/part"

module Herd
  module Cluster
    # The monitor's clocks: a request past `timeout`, a child not ready
    # within `spawn_timeout`, a stop past its grace period. Each ends with
    # SIGKILL: a process past its deadline is not trusted to leave by itself.
    # @api private
    class Deadlines
      include Monitor::Part

      # @param children [Children]
      # @param context [Context]
      # @param workload [Workload]
      # @param service [#job_worker?] job workers have no `timeout`
      def initialize(children:, context:, workload:, service:)
        @children = children
        @context = context
        @workload = workload
        @service = service
        @stop_at = nil
      end

      # How many spawn_timeouts a mold's heap preparation gets, from its
      # start: it runs at a lower priority (docs/REFORKING.md, "Priority"),
      # and on a machine whose CPU the workers (or anything else) use up
      # it waits for what they leave. Killed for taking its time, it would
      # only be retried, and prepared again from the start.
      PREPARE_BUDGET = 3

      # A mold said it starts preparing its heap: its clock starts over, with
      # {PREPARE_BUDGET} spawn_timeouts.
      # @param child [Child]
      def preparing(child)
        return unless child.state == :spawning

        child.spawned_at = Clock.now
        child.spawn_budget = config.spawn_timeout * PREPARE_BUDGET
      end

      # A stop began: every child must be gone `seconds` from now.
      def stop_within(seconds)
        @stop_at = Clock.now + seconds
      end

      # Kills what is overdue.
      # @yieldparam child [Child] a child that timed out before it told us its pid
      def enforce
        return kill_all("shutdown timeout reached") if @stop_at && Clock.now > @stop_at

        @children.each do |child|
          if (label = @workload.overdue(child, timeout(child)))
            log("#{child} timed out after #{config.timeout}s on #{label}; killing it")
            @context.telemetry&.count(:timeouts)
            child.busy_since = nil
            child.state = :stopping
            child.killed = :timeout
            @children.signal(child, :KILL)
          elsif child.state == :spawning && Clock.now - child.spawned_at > (child.spawn_budget || config.spawn_timeout)
            log("#{child} #{late(child)}; killing it")
            @context.telemetry&.count(:spawn_failures)
            child.state = :stopping
            child.killed = :spawn_timeout
            child.pid ? @children.signal(child, :KILL) : yield(child)
          end
        end
      end

      private

      def timeout(child)
        config.timeout unless child.worker? && @service.job_worker?(child.number, config)
      end

      def late(child)
        return "was not ready within spawn_timeout (#{config.spawn_timeout}s)" unless child.spawn_budget
        if child.worker?
          return "was not ready within #{PREPARE_BUDGET} x spawn_timeout " \
            "(#{child.spawn_budget}s; it warms up at a lower priority)"
        end

        "did not finish preparing its heap within #{PREPARE_BUDGET} x spawn_timeout (#{child.spawn_budget}s)"
      end

      def kill_all(reason)
        log("#{reason}: killing #{@children.count} process(es)") if @children.any?
        @children.each { |child| @children.signal(child, :KILL) }
        @stop_at = nil
      end
    end
  end
end
