# frozen_string_literal: true

module Herd
  module Cluster
    # The monitor's side of a child's death: every child is reaped (known or
    # not: it may be PID 1 in a container), and each death is logged with
    # what it means: a worker replaced, a refork failed, a mold to replace
    # or a boot to retry.
    # @api private
    module MonitorReaping
      private

      def reap
        loop do
          pid, status = Process.waitpid2(-1, Process::WNOHANG)
          break unless pid

          child = @children.by_pid(pid)
          child ? on_exit(child, status) : @log.info(Monitor::ROLE, "reaped pid #{pid} (#{describe(status)}), not one of ours")
        end
      rescue Errno::ECHILD
        nil
      end

      def on_exit(child, status)
        @children.delete(child)
        @log.info(Monitor::ROLE, "#{child} #{describe(status)}#{serving(child, status)}")
        if child.worker?
          @telemetry.worker_killed(Signal.signame(status.termsig)) if status.signaled?
          @telemetry.count(:requests_retired, @workload.requests(child))
          info = WorkerInfo.new(number: child.number, generation: child.generation, pid: child.pid, requests: child.requests)
          @config.hooks.run(:after_worker_exit, @log, Monitor::ROLE, @context, info, status)
          if @state == :running
            # Killed by its spawn timeout, it was counted then; the pause
            # before the next spawn grows as for a worker that died starting.
            spawn_failed if child.state == :spawning
            @recovery.worker_failed if child.killed == :spawn_timeout
          end
        elsif @rollout.pending_mold?(child)
          @rollout.failed(child, describe(status)) if @state == :running
        elsif @state == :running && child.state != :stopping
          (child.state == :spawning) ? mold_failed : mold_died
        end
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
        @log.info(Monitor::ROLE, "replacing the mold in #{delay.round(1)}s; workers keep serving")
      end

      def mold_failed
        @telemetry.count(:spawn_failures)
        delay = @recovery.mold_failed
        if delay
          @log.info(Monitor::ROLE, "mold failed to boot; retrying in #{delay}s")
        else
          @log.error(Monitor::ROLE, "the application failed to boot #{@recovery.boot_failures} times in a row " \
            "(last error: #{@last_boot_error || "see above"}); giving up")
          @exit_status = 1
          stop(:immediate)
        end
      end

      # A worker died before it was ready.
      def spawn_failed
        @telemetry.count(:spawn_failures)
        @recovery.worker_failed
      end

      def describe(status)
        return "exited with status #{status.exitstatus}" if status.exited?

        "was killed by SIG#{Signal.signame(status.termsig)}"
      end
    end
  end
end
