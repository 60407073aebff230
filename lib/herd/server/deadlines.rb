# frozen_string_literal: true

require_relative "../clock"
require_relative "monitor_part"

module Herd
  module Server
    # The monitor's clocks: a request past `timeout`, a child not ready
    # within `spawn_timeout`, a stop past its grace period. Each ends with
    # SIGKILL: a process past its deadline is not trusted to leave by itself.
    # @api private
    class Deadlines
      include MonitorPart

      # @param children [Children]
      # @param context [Context]
      # @param workload [Workload]
      def initialize(children:, context:, workload:)
        @children = children
        @context = context
        @workload = workload
        @stop_at = nil
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
          if (label = @workload.overdue(child, config.timeout))
            log("#{child} timed out after #{config.timeout}s on #{label}; killing it")
            @context.telemetry&.count(:timeouts)
            child.busy_since = nil
            child.state = :stopping
            @children.signal(child, :KILL)
          elsif child.state == :spawning && Clock.now - child.spawned_at > config.spawn_timeout
            log("#{child} was not ready within spawn_timeout (#{config.spawn_timeout}s); killing it")
            @context.telemetry&.count(:spawn_failures)
            child.state = :stopping
            child.pid ? @children.signal(child, :KILL) : yield(child)
          end
        end
      end

      private

      def kill_all(reason)
        log("#{reason}: killing #{@children.count} process(es)") if @children.any?
        @children.each { |child| @children.signal(child, :KILL) }
        @stop_at = nil
      end
    end
  end
end
