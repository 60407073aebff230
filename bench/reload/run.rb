# frozen_string_literal: true

require "fileutils"
require_relative "../rails/run"
require_relative "cpu_breakdown"

module ReloadBench
  RELEASE_INITIALIZER = File.join(__dir__, "release.rb")
  MOLD_READY = /mold \(gen (\d+)\), pid (\d+) ready/

  # How a server reloads and how the driver knows the roll is over.
  #   signal: what the driver sends to the pid it spawned
  #   done:   (running, log since the signal, workers) -> true once every worker runs the new code
  #   mold:   (log since the signal) -> [generation, pid] of the new mold once ready, or nil
  Reloader = Struct.new(:server, :signal, :done, :mold, keyword_init: true)

  HERD_DONE = lambda do |running, log, workers|
    generation = log[MOLD_READY, 1]&.to_i
    next false unless generation
    # The log first: /proc is read only once it says every worker number is
    # ready on the new mold.
    next false if log.scan(/worker (\d+) \(gen #{generation}\), pid \d+ ready/).uniq.size < workers

    processes = running.processes
    roles = processes.map { |process| process.values_at(:role, :generation) }
    roles.count { |role, gen| role == :worker && gen == generation } == workers &&
      roles.none? { |role, gen| (role == :worker && gen != generation) || role == :transient || (role == :mold && gen != generation) }
  end

  # Puma (fork_worker) phased restart: every worker booted again in the
  # phase the restart started (its auto-refork after 1,000 requests may have
  # used a phase before).
  PUMA_PHASE = /Starting phased worker restart, phase: (\d+)/
  PUMA_DONE = lambda do |_running, log, workers|
    phase = log[PUMA_PHASE, 1]
    phase && log.scan(/Worker (\d+) \(PID: \d+\) booted in [\d.]+s, phase: #{phase}\b/).flatten.uniq.size >= workers
  end
  PUMA_MOLD = lambda do |log, _running|
    phase = log[PUMA_PHASE, 1]
    (m = phase && log.match(/Worker 0 \(PID: (\d+)\) booted in [\d.]+s, phase: #{phase}\b/)) && [phase.to_i, m[1].to_i]
  end

  def self.reloaders(options)
    name = options ? "herd (#{options})" : "herd"
    herd = RailsBench.herd(name, options, description: "refork_after [50, 100, 1000]#{"; #{options}" if options}")
    [
      Reloader.new(server: herd, signal: "HUP", done: HERD_DONE, mold: ->(log, _running) { log.scan(MOLD_READY).last&.map(&:to_i) }),
      Reloader.new(server: RailsBench::SERVERS.find { |s| s.name == "puma-fork_worker" }, signal: "USR1", done: PUMA_DONE,
        mold: PUMA_MOLD)
    ]
  end

  module_function

  # One reload under load. Phases (CLOCK_MONOTONIC, from the first request):
  # warm (until a rollout of generation >= `warm_generation` has settled, or
  # `warm` seconds for a server that does not refork), steady (`steady` s),
  # the signal, the roll (until every worker runs the new code), after
  # (`after` s of load on the new code).
  # @return [Hash]
  # With `new_code: false` nothing changes on disk (bench/refork: a USR2
  # refork, the same code).
  def run(reloader, template:, work:, round:, workers:, interval:, steady:, after:, warm:, warm_generation:, new_code: true)
    server = reloader.server
    name = "reload-#{server.name.gsub(/\W+/, "_")}-#{round}"
    dir = RailsBench.copy(template[:dir], work, name)
    FileUtils.cp(RELEASE_INITIALIZER, File.join(dir, "config", "initializers", "bench_release.rb"))
    File.write(File.join(dir, "RELEASE"), "1\n")
    result = {server: server.name, description: server.description, signal: reloader.signal, round: round}
    running = RailsBench::Running.new(server, dir: dir, workers: workers, log_path: File.join(work, "#{name}.log"))
    running.start
    stop_path = File.join(work, "#{name}.stop")
    sampler = Bench::Sampler.new(running.pid, interval: interval, titles: true, cpu: true)
    client = RailsBench::Client.new(port: running.port, ids: template[:ids], stop_path: stop_path, header: "x-release")
    t0 = Bench::Clock.now
    sampler.start
    client.start
    result[:warm] = warm_up(running, server, workers, warm, warm_generation)
    steady_from = Bench::Clock.now
    sleep steady
    log_mark = running.log.size
    follower = running.follow_log
    File.write(File.join(dir, "RELEASE"), "2\n") if new_code # the new code: read by the next boot only
    signaled = Bench::Clock.now
    Process.kill(reloader.signal, running.pid)
    mold = watch_mold(running, reloader, follower, signaled)
    done_at = wait_done(running, reloader, follower, workers, signaled)
    sleep after
    stopping = Bench::Clock.now
    FileUtils.touch(stop_path)
    records = client.wait
    finished = Bench::Clock.now
    sampler.stop
    result.merge!(analyse(records, sampler.samples, t0: t0, steady_from: steady_from, signaled: signaled, done_at: done_at,
      stopping: stopping, finished: finished, mold: mold))
    result[:cpu] = CPUBreakdown.new(sampler.samples, server.role, mold[:generation], result[:throughput])
      .phases(steady: [steady_from, signaled], window: [signaled, signaled + 5.0], after: [done_at + 1.0, stopping])
    result[:events] = running.log[log_mark..].lines.grep(/monitor:|Worker|phase|HUP|reload|refork|warm-up|heap prepared/).map { |l| l.strip[0, 300] }.first(60)
    result
  rescue => e
    client&.kill
    result.merge!(error: "#{e.class}: #{e.message}"[0, 3000], backtrace: e.backtrace.first(5))
  ensure
    sampler&.stop
    problems = running&.stop || []
    result[:stop_problems] = problems unless problems.empty?
    if running && (result[:error] || !problems.empty?)
      lines = running.log.lines
      result[:log_tail] = lines.last(10).join
      result[:server_log] = lines.grep_v(/\A[IWDEF], \[/).last(60).join # the server's own lines, not Rails' request log
    end
    FileUtils.rm_rf(dir) if dir
  end

  # Until the refork schedule reached `generation` and that rollout settled
  # (herd), or `seconds` (a server whose log has no generations).
  def warm_up(running, server, workers, seconds, generation)
    started = Bench::Clock.now
    deadline = started + 240
    if server.name.start_with?("herd") && !server.env["HERD_BENCH_OPTIONS"].to_s.include?("refork_after false")
      until settled?(running, workers, generation)
        raise "no settled generation #{generation} in 240 s\n#{running.log_tail}" if Bench::Clock.now > deadline

        sleep 0.1
      end
    else
      sleep seconds
    end
    {seconds: (Bench::Clock.now - started).round(1), generation: running.processes.filter_map { |p| p[:role] == :worker && p[:generation] }.max}
  end

  def settled?(running, workers, generation)
    processes = running.processes
    gens = processes.filter_map { |p| p[:generation] if %i[worker mold].include?(p[:role]) }.uniq
    processes.count { |p| p[:role] == :worker } == workers && processes.none? { |p| p[:role] == :transient } &&
      gens.size == 1 && gens.first >= generation
  end

  # The new mold's own PSS, sampled as soon as the log says it is ready
  # (polled every 20 ms), before the workers it forks share its pages.
  def watch_mold(running, reloader, follower, signaled)
    deadline = signaled + 120
    until (found = reloader.mold.call(follower.read, running))
      raise "no new mold in 120 s\n#{running.log_tail}" if Bench::Clock.now > deadline

      sleep 0.02
    end
    generation, pid = found
    sample = Herd::Memory.sample(pid)
    {generation: generation, pid: pid, seconds_after_signal: (Bench::Clock.now - signaled).round(2),
     pss: (sample.pss / Bench::MIB).round(1), uss: (sample.uss / Bench::MIB).round(1),
     rss: (sample.rss / Bench::MIB).round(1)}
  end

  def wait_done(running, reloader, follower, workers, signaled)
    deadline = signaled + 180
    until reloader.done.call(running, follower.read, workers)
      raise "the roll did not end in 180 s\n#{running.log_tail}" if Bench::Clock.now > deadline

      sleep 0.05
    end
    Bench::Clock.now
  end

  def analyse(records, samples, t0:, steady_from:, signaled:, done_at:, stopping:, finished:, mold:)
    rel = ->(t) { (t - t0).round(2) }
    steady = samples.select { |s| s[:t].between?(steady_from, signaled) }.map { |s| s[:pss] }
    roll = samples.select { |s| s[:t].between?(signaled, done_at + 1.0) }
    peak = roll.max_by { |s| s[:pss] }
    steady_pss = Bench::Stats.median(steady)
    bound = ((steady_pss + mold[:pss]) * 1.10).round(1)
    bad = RailsBench.failures(records)
    after = records.select { |r| r[2] >= done_at }
    during = records.select { |r| r[2] >= signaled && r[2] < done_at }
    releases = ->(list) { list.map { |r| r[4].to_s }.tally }
    {
      requests: records.size, failed: bad.size, failures: bad.first(5).map { |r| r.values_at(0, 1, 4) },
      rps: (records.size / (finished - t0)).round(1), latency_ms: RailsBench.latency(records),
      latency_roll_ms: RailsBench.latency(during),
      latency_steady_ms: RailsBench.latency(records.select { |r| r[2].between?(steady_from, signaled) }),
      throughput: throughput(records, steady_from: steady_from, signaled: signaled, done_at: done_at, stopping: stopping),
      times: {signal: rel.call(signaled), mold_ready: (rel.call(signaled) + mold[:seconds_after_signal]).round(2),
              roll_done: rel.call(done_at), end: rel.call(finished), roll_seconds: (done_at - signaled).round(2)},
      responses: {during_roll: releases.call(during), after_roll: releases.call(after),
                  first_new: records.select { |r| r[4].to_s == "2" }.map { |r| r[2] }.min&.then(&rel),
                  last_old: records.select { |r| r[4].to_s == "1" }.map { |r| r[2] + r[3] }.max&.then(&rel),
                  all_new_after_roll: !after.empty? && after.all? { |r| r[4].to_s == "2" }},
      memory: {steady_median: steady_pss&.round(1), steady_max: steady.max&.round(1), steady_samples: steady.size,
               peak: peak && peak[:pss], peak_at: peak && rel.call(peak[:t]), peak_processes: peak && peak[:rows],
               peak_by_generation: peak && by_generation(peak[:rows], mold[:generation]),
               new_mold: mold, bound: bound, margin: peak && (bound - peak[:pss]).round(1),
               pass: !peak.nil? && peak[:pss] <= bound,
               strict_bound: (steady_pss + mold[:pss] * 1.10).round(1),
               strict_pass: !peak.nil? && peak[:pss] <= steady_pss + mold[:pss] * 1.10,
               after_roll_end: samples.last && samples.last[:pss]},
      samples: samples.map { |s| [rel.call(s[:t]), s[:pss], s[:processes]] }
    }
  end

  # Responses completed per second: in the steady phase, during the roll
  # (signal to every worker on the new mold), and in the 5 s from the
  # signal (a window that holds the refork even when the roll is short).
  # Also after the roll (from 1 s after it to the end of the load), and the
  # window against the mean of the phases before and after it: this VM's
  # two vCPUs change speed within minutes (up to 1.8x), and a phase on
  # either side of the window tells a drift from the refork's own cost.
  def throughput(records, steady_from:, signaled:, done_at:, stopping:)
    done = records.map { |r| r[2] + r[3] }
    rate = ->(from, to) { (to > from) ? (done.count { |t| t >= from && t < to } / (to - from)).round(1) : nil }
    steady = rate.call(steady_from, signaled)
    roll = rate.call(signaled, done_at)
    window = rate.call(signaled, signaled + 5.0)
    after = rate.call([done_at + 1.0, signaled + 5.0].max, stopping)
    around = after && steady && (steady + after) / 2.0
    {steady: steady, roll: roll, window5: window, after: after,
     roll_ratio: steady && roll && (roll / steady).round(2), window5_ratio: steady && window && (window / steady).round(2),
     window5_around_ratio: around && window && (window / around).round(2)}
  end

  # herd's processes at a sample, by the generation in their titles:
  # :old (before the reload), :new, :other (the monitor, forking middles).
  def by_generation(rows, generation)
    rows.each_with_object(Hash.new(0.0)) do |(_pid, title, pss), sums|
      gen = title[/\(gen (\d+)\)/, 1]&.to_i
      key = if gen.nil?
        :other
      elsif gen >= generation
        :new
      else
        :old
      end
      sums[key] = (sums[key] + pss).round(1)
    end
  end
end
