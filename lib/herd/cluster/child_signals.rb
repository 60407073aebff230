# frozen_string_literal: true

require_relative "../process_exit"
require_relative "signal_queue"

module Herd
  module Cluster
    # The signals of a mold or a worker. Operators signal the monitor, but a
    # signal meant for it also reaches a child (a `kill` of the wrong pid, a
    # process-group kill, a logrotate config copied from elsewhere), and a
    # child must never die of one: the default action of USR1, USR2 and HUP
    # is to terminate, and TTIN/TTOU stop the process.
    #
    # - TERM, INT: leave now (stdout and stderr flushed, no at_exit hook);
    #   with `graceful:` (job workers, whose systems make TERM graceful), a
    #   graceful stop like QUIT.
    # - QUIT: a graceful stop, seen between requests. A worker that has not
    #   said ready yet has nothing in flight, and may be held in its start
    #   (an after_fork hook) where it reads neither signals nor messages:
    #   there QUIT ends it at once (how the monitor stops one, Children#stop).
    # - USR1: reopen the log files, between requests.
    # - TSTP: quiet (a job worker takes no new job; Sidekiq's Web UI sends
    #   it); ignored by a worker that has no such state. Its default action
    #   would stop the process.
    # - TTIN, TTOU, USR2, HUP, WINCH: the monitor's; noted, logged, ignored.
    # @api private
    class ChildSignals
      QUEUED = %w[QUIT USR1 TSTP TTIN TTOU USR2 HUP WINCH].freeze
      STOPS = %w[TERM INT].freeze

      # @param log [Log]
      # @param role [String] how the log names this process
      # @param monitor_pid [Integer] named when a signal is ignored
      # @param starting [Boolean] a worker before it says ready (see {#serving!})
      # @param graceful [Boolean] TERM and INT stop gracefully, as QUIT does
      def initialize(log, role, monitor_pid, starting: false, graceful: false)
        @log = log
        @role = role
        @monitor_pid = monitor_pid
        STOPS.each { |name| trap(name) { ProcessExit.now(0) } } unless graceful
        @queue = SignalQueue.new(graceful ? QUEUED + STOPS : QUEUED)
        @starting = starting
        return unless starting

        (graceful ? ["QUIT", *STOPS] : ["QUIT"]).each do |name|
          queued = trap(name) { @starting ? ProcessExit.now(0) : queued.call(name) }
        end
      end

      # The worker is about to say ready: QUIT waits for the end of a request from now on.
      def serving!
        @starting = false
      end

      # @return [IO] readable when a queued signal arrived
      def io
        @queue.io
      end

      # What the signals received since the last call ask for; the ones
      # meant for the monitor are logged here.
      # @return [Array<Symbol>] :stop, :reopen_logs and :quiet, in order
      def take
        @queue.drain.filter_map do |name|
          case name
          when "QUIT", *STOPS then :stop
          when "USR1" then :reopen_logs
          when "TSTP" then :quiet
          else
            @log.info(@role, "SIG#{name} ignored: signals for the server go to the monitor (pid #{@monitor_pid})")
            nil
          end
        end
      end

      # In a process forked from this one, once it has its own ChildSignals.
      def close
        @queue.close
      end
    end
  end
end
