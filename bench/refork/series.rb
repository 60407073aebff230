# frozen_string_literal: true

require "fileutils"
require_relative "setups"

module ReforkBench
  # Many USR2 reforks in one server run, each measured against its own
  # neighbourhood. bench/refork.rb restarts the server for every refork and
  # compares one 5 s window with a steady phase 8 s before it; on the 2-vCPU
  # VM the vCPUs' speed moves a phase's throughput by 10-25% within a minute,
  # so one refork's ratio says as much about the host as about the refork.
  # Here the server reforks every ~10 s under a steady load, and each window
  # (5 s from the signal) is divided by the mean of the 5 s before the signal
  # and the 5 s after the window (or after the roll, when the roll outlasts
  # the window): phases seconds apart, and many of them, so the mean and its
  # spread say what a refork costs.
  module Series
    WINDOW = 5.0
    ROLL_TIMEOUT = 120
    STEP_LINES = /heap prepared|warm-up:/

    module_function

    # One server: boot, warm-up, `reforks` USR2s, each `WINDOW` s of
    # measured load before it and after its window.
    # @return [Hash] the signals, the ends of the rolls and every request
    def run(reloader, template:, work:, round:, workers:, reforks:, warm:)
      server = reloader.server
      name = "series-#{server.name.gsub(/\W+/, "_")}-#{round}"
      dir = RailsBench.copy(template[:dir], work, name)
      running = RailsBench::Running.new(server, dir: dir, workers: workers, log_path: File.join(work, "#{name}.log"))
      running.start
      stop_path = File.join(work, "#{name}.stop")
      client = RailsBench::Client.new(port: running.port, ids: template[:ids], stop_path: stop_path).start
      sleep warm
      next_signal = Bench::Clock.now + WINDOW
      rolls = Array.new(reforks) do
        sleep_until(next_signal)
        roll = refork(running, reloader, workers)
        # The next signal leaves this refork its 5 s after (its window or
        # its roll, whichever ends later, and a second's margin), which are
        # also the 5 s before the next one.
        next_signal = [roll[:signaled] + WINDOW, roll[:done] + 1.0].max + WINDOW
        roll
      end
      sleep_until(next_signal)
      FileUtils.touch(stop_path)
      records = client.wait
      {server: server.name, description: server.description, round: round, rolls: rolls, records: records}
    rescue => e
      client&.kill
      {server: server&.name, round: round, error: "#{e.class}: #{e.message}"[0, 3000], backtrace: e.backtrace.first(5)}
    ensure
      problems = running&.stop || []
      FileUtils.rm_rf(dir) if dir
      warn "  #{server.name} round #{round}: stop: #{problems.join("; ")}" unless problems.empty?
    end

    # The roll is over once every worker runs on a generation newer than
    # any before the signal (Pitchfork's `done` looks at the newest
    # generation alone: right after a second USR2 that is still the last one).
    def refork(running, reloader, workers)
      before = newest_generation(running)
      follower = running.follow_log
      signaled = Bench::Clock.now
      Process.kill(reloader.signal, running.pid)
      deadline = signaled + ROLL_TIMEOUT
      until newest_generation(running) > before && reloader.done.call(running, follower.read, workers)
        raise "the roll did not end in #{ROLL_TIMEOUT} s\n#{running.log_tail}" if Bench::Clock.now > deadline

        sleep 0.05
      end
      done = Bench::Clock.now
      # What the refork's own steps cost (herd logs each: the new mold's
      # heap preparation, each new worker's warm-up), to tell them from the
      # new workers' first requests.
      {signaled: signaled, done: done, steps: follower.read.lines.grep(STEP_LINES).map { |line| line.strip[0, 300] }}
    end

    def newest_generation(running)
      running.processes.filter_map { |process| process[:generation] if %i[mold worker].include?(process[:role]) }.max.to_i
    end

    def sleep_until(time)
      left = time - Bench::Clock.now
      sleep left if left.positive?
    end

    # Each refork's window against its neighbours.
    # @param records [Array<Array>] [kind, status, start, seconds, ...] from RailsBench::Client
    # @return [Array<Hash>]
    def reforks(rolls, records)
      ends = records.map { |record| record[2] + record[3] }
      rate = ->(from, to) { ends.count { |t| t >= from && t < to } / (to - from) }
      latency = lambda do |from, to|
        RailsBench.latency(records.select { |record| record[2] >= from && record[2] < to })[:p99]
      end
      rolls.map do |roll|
        signaled, done = roll.values_at(:signaled, :done)
        after_from = [signaled + WINDOW, done + 1.0].max
        before = rate.call(signaled - WINDOW, signaled)
        window = rate.call(signaled, signaled + WINDOW)
        after = rate.call(after_from, after_from + WINDOW)
        around = (before + after) / 2.0
        # Whatever the pace of the roll: the responses missing from the
        # signal to the after phase, in seconds of the neighbours' rate.
        lost = after_from - signaled - rate.call(signaled, after_from) * (after_from - signaled) / around
        {roll_seconds: (done - signaled).round(2), before: before.round(1), window: window.round(1), after: after.round(1),
         ratio: (window / around).round(3), ratio_before: (window / before).round(3), lost_seconds: lost.round(3),
         p99_before_ms: latency.call(signaled - WINDOW, signaled), p99_roll_ms: latency.call(signaled, done)}
      end
    end
  end
end
