# frozen_string_literal: true

require_relative "../errors"

module Herd
  module Jobs
    # A job worker's work: its job system's threads run the jobs, and the
    # main thread, here, watches the worker's control descriptors, reports
    # the jobs to the monitor once a tick (Cluster::Worker#progress), and
    # lets the job system beat its heartbeat. A stop finishes the jobs in
    # hand, as the job system's own stop does; a promotion does the same
    # before the fork, then starts over.
    # @api private
    class JobLoop
      # Seconds between two reports when nothing wakes the main thread.
      TICK = 1
      # What a worker's running jobs are called on the scoreboard ("jobs HardJob, MailJob").
      LABEL = "jobs"

      # @param worker [Cluster::Worker]
      # @param engine [#start, #beat, #quiet, #stop, #alive?, #leave, #tally] the job system
      #   ({SidekiqEngine}, {SolidQueueEngine})
      def initialize(worker, engine)
        @worker = worker
        @engine = engine
        @quiet = false
      end

      # Nothing to warm up: a job worker's first jobs are its warm-up.
      def warm_up(surge:)
        nil
      end

      # Runs jobs until the worker stops, then finishes the ones in hand.
      # @raise [JobsError] when the job system's threads died
      def run
        start
        until @worker.stopping?
          ready, = IO.select(@worker.control_ios, nil, nil, TICK)
          ready&.each { |io| @worker.take_control(io) }
          @worker.now_and_then
          report
          break if @worker.stopping?

          @engine.beat
          next if @engine.alive?

          raise JobsError, "#{@engine} stopped running jobs by itself; the monitor replaces this worker"
        end
        stop
      end

      # TSTP: takes no new job and finishes those in hand; a quiet worker
      # waits for its stop.
      def quiet
        @quiet = true
        @engine.quiet
      end

      # A promotion: no job thread may be inside a job (or a C library's
      # lock) when the next mold is forked, so the jobs in hand finish (or
      # go back to their queue, as on a stop), the fork happens, and work
      # starts over (unless it was quiet: it stays so).
      def forking
        stop
        yield
        start unless @worker.stopping? || @quiet
      end

      # In the new mold forked from this worker: its workers start their own.
      def leave
        @engine.leave
      end

      private

      def start
        @worker.report_jobs_as_they_run(@engine.tally, LABEL)
        @engine.start(@worker.info)
      end

      def stop
        @engine.stop
        report
      end

      def report
        tally = @engine.tally
        running = tally.running
        @worker.progress(tally.done, running && [LABEL, running])
      end
    end
  end
end
