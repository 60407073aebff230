# frozen_string_literal: true

require_relative "../log_files"
require_relative "../systemd"
require_relative "part"

module Herd
  module Cluster
    class Monitor
      # What each signal to the monitor means (docs/SIGNALS.md). Every
      # signal whose default action would end the monitor is caught: an
      # operator's stray signal is logged and ignored, never a silent death
      # of the whole server. (SIGKILL and SIGSTOP cannot be caught; SEGV,
      # BUS, ILL, FPE and VTALRM are Ruby's own.)
      # @api private
      class Signals
        include Part

        # Caught and logged, nothing else: their default action is to terminate.
        IGNORED = %w[ALRM PROF IO PWR XCPU XFSZ].freeze
        # Every signal the monitor catches.
        NAMES = (%w[QUIT TERM INT TSTP TTIN TTOU CHLD USR1 USR2 HUP WINCH] + IGNORED).freeze
        # Seconds an immediate stop (INT) gives the children before SIGKILL.
        IMMEDIATE_GRACE = 2

        def initialize(context:, plan:, children:, rollout:, spawner:, deadlines:, service:, ksm:)
          @context = context
          @ksm = ksm
          @plan = plan
          @children = children
          @rollout = rollout
          @spawner = spawner
          @deadlines = deadlines
          @service = service
        end

        # @param signal [String] its name, without SIG
        def on_signal(signal)
          case signal
          when "QUIT", "TERM" then stop(:graceful, signal)
          # Job systems finish their jobs on INT too (Ctrl-C in a terminal).
          when "INT" then stop(only_job_workers? ? :graceful : :immediate, signal)
          when "TSTP" then quiet
          when "TTIN" then resize(@plan.target + 1)
          when "TTOU" then resize([@plan.target - 1, 0].max)
          when "USR1" then reopen_logs
          when "USR2" then @rollout.refork("USR2") if @plan.running?
          when "HUP" then reload
          when "CHLD", "WINCH" then nil # reaped every tick; a terminal resized
          else log("SIG#{signal} ignored")
          end
        end

        # @param how [Symbol] :graceful (QUIT, TERM) or :immediate
        # @param signal [String, nil] the signal that asked for it, for the log
        def stop(how, signal = nil)
          return if @plan.stopping? && how == :graceful

          @plan.stop!
          Systemd.notify("STOPPING=1")
          if how == :graceful
            log("#{signal}: graceful stop, waiting up to #{config.shutdown_timeout}s for the work in hand")
            @children.each { |child| @children.stop(child) }
            @deadlines.stop_within(config.shutdown_timeout)
          else
            log("#{signal || "giving up"}: immediate stop")
            @children.each { |child| @children.signal(child, :TERM) }
            @deadlines.stop_within(IMMEDIATE_GRACE)
          end
        end

        private

        # TSTP: job workers take no new job (before a TERM, as Sidekiq's
        # deploys do); its default action would stop the monitor.
        def quiet
          workers = @children.select { |child| child.worker? && @service.job_worker?(child.number, config) }
          return log("TSTP ignored: no job worker to quiet") if workers.empty?

          log("TSTP: quieting #{workers.size} job worker(s): no new job; stop them with TERM or QUIT")
          workers.each { |child| @children.signal(child, :TSTP) }
        end

        def only_job_workers?
          (0...[@plan.target, 1].max).all? { |number| @service.job_worker?(number, config) }
        end

        def resize(target)
          return if !@plan.running? || target == @plan.target

          log("workers: #{@plan.target} -> #{target}")
          @plan.target = target
        end

        # Ours at once; each child reopens its own (a worker between requests).
        def reopen_logs
          reopened = LogFiles.reopen
          log("USR1: reopened #{reopened.empty? ? "no file (none was renamed)" : reopened.join(", ")}; " \
            "telling #{@children.count} process(es)")
          @children.each { |child| child.link.send_message(Protocol::ReopenLogs.new) unless child.link.closed? }
        end

        # HUP: the config file read again and a fresh mold booted from
        # config.ru; the workers roll onto it once it is ready.
        def reload
          return unless @plan.running?
          if @spawner.local_mold
            return log("HUP ignored: plain preload (no subreaper) cannot reload; restart the service")
          end
          if config.app
            return log("HUP ignored: this server was given an app object (rackup, rails server), " \
              "not a file it can load again; restart it to load new code")
          end

          @rollout.reload("HUP") if reread_config
        end

        # A config file that does not load stops the reload: the deploy is
        # broken, and the running generation keeps serving.
        # @return [Boolean] whether to go on
        def reread_config
          return true unless config.reloader

          fresh = config.reloader.call
          kept = @service.kept_on_reload(fresh, config)
          log("HUP: #{kept}") if kept
          if fresh.control_listen != config.control_listen
            log("HUP: control_listen changed in the config file; " \
              "keeping the endpoint as it is (a restart binds the new one)")
          end
          log("HUP: workers: #{@plan.target} -> #{fresh.process_count}") if fresh.process_count != @plan.target
          @plan.target = fresh.process_count
          @ksm.apply(fresh.ksm) if fresh.ksm != config.ksm
          @context.config = fresh
          true
        rescue Herd::Error, ScriptError, StandardError => e
          @context.log.error(Monitor::ROLE, "HUP: the config file did not load (#{e.message}); no reload, " \
            "generation #{@rollout.generation} keeps serving")
          false
        end
      end
    end
  end
end
