# frozen_string_literal: true

require_relative "part"

module Herd
  module Cluster
    class Monitor
      # The monitor's side of a child's death: every child is reaped (known
      # or not: it may be PID 1 in a container), and each death is logged
      # with what it means: a worker replaced, a refork failed, a mold to
      # replace or a boot to retry.
      # @api private
      class Reaper
        include Part

        # @return [String, nil] what the last mold that failed to boot said
        attr_accessor :last_boot_error

        # @param on_give_up [#call] stops the server when the app keeps failing to boot
        def initialize(context:, plan:, children:, telemetry:, workload:, recovery:, rollout:, on_give_up:)
          @context = context
          @plan = plan
          @children = children
          @telemetry = telemetry
          @workload = workload
          @recovery = recovery
          @rollout = rollout
          @on_give_up = on_give_up
        end

        # Reaps every child that exited, without blocking.
        def reap
          loop do
            pid, status = Process.waitpid2(-1, Process::WNOHANG)
            break unless pid

            child = @children.by_pid(pid)
            child ? on_exit(child, status) : log("reaped pid #{pid} (#{describe(status)}), not one of ours")
          end
        rescue Errno::ECHILD
          nil
        end

        # A worker died before it was ready.
        def spawn_failed
          @telemetry.count(:spawn_failures)
          @recovery.worker_failed
        end

        private

        def on_exit(child, status)
          @children.delete(child)
          log("#{child} #{describe(status)}#{serving(child, status)}")
          if child.worker?
            worker_exited(child, status)
          elsif @rollout.pending_mold?(child)
            @rollout.failed(child, describe(status)) if @plan.running?
          elsif @plan.running? && child.state != :stopping
            (child.state == :spawning) ? mold_failed : mold_died
          end
        end

        def worker_exited(child, status)
          @telemetry.worker_killed(Signal.signame(status.termsig)) if status.signaled?
          @telemetry.count(:requests_retired, @workload.requests(child))
          info = WorkerInfo.new(number: child.number, generation: child.generation, pid: child.pid,
            requests: child.requests)
          config.hooks.run(:after_worker_exit, @context.log, Monitor::ROLE, @context, info, status)
          return unless @plan.running?

          # Killed by its spawn timeout, it was counted then; the pause
          # before the next spawn grows as for a worker that died starting.
          spawn_failed if child.state == :spawning
          @recovery.worker_failed if child.killed == :spawn_timeout
        end

        # What a worker killed by a signal (kill -9, the OOM killer) was doing.
        def serving(child, status)
          return "" unless child.worker? && status.signaled?

          elapsed, label = @workload.current(child)
          label ? " while serving #{label} (#{elapsed.round(1)}s)" : " while idle"
        end

        # A mold that dies after booting is replaced after a pause that grows
        # if it keeps dying; the workers go on serving meanwhile.
        def mold_died
          delay = @recovery.mold_died
          log("replacing the mold in #{delay.round(1)}s; workers keep serving")
        end

        def mold_failed
          @telemetry.count(:spawn_failures)
          delay = @recovery.mold_failed
          return log("mold failed to boot; retrying in #{delay}s") if delay

          @context.log.error(Monitor::ROLE,
            "the application failed to boot #{@recovery.boot_failures} times in a row " \
            "(last error: #{@last_boot_error || "see above"}); giving up")
          @plan.failed!
          @on_give_up.call
        end

        def describe(status)
          return "exited with status #{status.exitstatus}" if status.exited?

          "was killed by SIG#{Signal.signame(status.termsig)}"
        end
      end
    end
  end
end
