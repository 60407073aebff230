# frozen_string_literal: true

require_relative "app"
require_relative "group"
require_relative "../support/clock"
require_relative "../support/ksm"
require_relative "../support/processes"
require_relative "../support/sampler"
require_relative "../support/stats"

module JobsBench
  # herd's log lines that say a refork began.
  REFORK = /refork \(.*promoting/

  module_function

  # One setup, once: a fresh copy of the app, its processes started and
  # registered with the job system, Σ PSS sampled every `interval` s, the
  # mixed batch drained (not for a baseline), then the CPU batch, the
  # processes stopped.
  # @return [Hash]
  def run(setup, round:, template:, work:, redis:, options:)
    name = "#{setup.name.tr("/", "_")}-#{round}"
    dir = copy(template[:dir], work, name)
    log_path = File.join(work, "#{name}.log")
    result = {setup: setup.name, system: setup.system.to_s, round: round}
    redis&.call("FLUSHALL") if setup.sidekiq?
    extra = setup.env.merge(setup.sidekiq? ? {"REDIS_URL" => redis.url} : {})
    group = Group.new(setup.commands, env: env(extra), chdir: dir, log_path: log_path)
    ksmd = Bench::KSM.cpu_seconds
    spawned = Bench::Clock.now
    group.start
    wait_ready(setup, group, dir, redis, timeout: options[:boot_timeout])
    result[:boot_s] = (Bench::Clock.now - spawned).round(2)
    sleep options[:settle]
    sampler = Bench::Sampler.new(group.leader, interval: options[:interval], titles: true)
    rest = sampler.take
    result[:rest_pss] = rest && rest[:pss]
    result[:processes] = rest && rest[:processes]
    sampler.start
    enqueuer = Enqueuer.new(dir: dir, env: env(extra), log_path: log_path)
    result[:enqueuer] = enqueuer.start
    if setup.baseline
      # Warmed as each process of the others is by the mixed batch before
      # its CPU batch: about a quarter of the CPU jobs each (not measured).
      result[:warmup] = batch("cpu", [options[:cpu_jobs] / 4, 1].max, enqueuer, group, dir, options)
    else
      result[:mixed] = batch("mixed", options[:jobs], enqueuer, group, dir, options)
    end
    result[:cpu] = batch("cpu", options[:cpu_jobs], enqueuer, group, dir, options)
    from = (result[:mixed] || result[:cpu])[:t0]
    to = result[:cpu][:t_end]
    sleep options[:interval] # one more sample after the last job
    ended = Bench::Clock.now
    if options[:idle].positive?
      # What the setup holds once its queues are quiet, as job workers
      # often are: the kernel's page merging, where asked for, catches up.
      sleep options[:idle]
      result[:idle_pss] = sampler.take[:pss]
    end
    result[:final] = final(group)
    result[:ksmd_cpu_s] = (Bench::KSM.cpu_seconds - ksmd).round(2)
    sampler.stop
    result[:memory] = Bench::Sampler.summary(sampler.samples, from: from, to: ended)
    result[:memory_cpu_batch] = Bench::Sampler.summary(sampler.samples, from: result[:cpu][:t0], to: to)
    result[:samples] = sampler.samples.select { |s| s[:t] <= ended }.map { |s| [(s[:t] - from).round(2), s[:pss], s[:processes]] }
    result[:recording] = sampler.samples.select { |s| s[:rows] && s[:t] >= from && s[:t] <= ended }
      .map { |s| [(s[:t] - from).round(2), s[:rows].map { |_, title, pss| [role_title(title), pss] }] }
    result[:jobs_run] = done_lines(dir).size
    result[:major_gcs] = major_gcs(done_lines(dir))
    result[:jobs_expected] = %i[warmup mixed cpu].sum { |key| result.dig(key, :jobs) || 0 }
    books(result, dir) unless setup.sidekiq?
    result
  rescue => e
    result[:error] = "#{e.class}: #{e.message}"[0, 3000]
    result
  ensure
    sampler&.stop
    enqueuer&.stop
    problems = group&.stop(timeout: options[:stop_timeout]) || []
    result[:stop_problems] = problems unless problems.empty?
    if group
      log = group.log
      result[:reforks] = log.scan(REFORK).size if setup.name.start_with?("herd")
      # What each mold's heap preparation did (compacted, a major GC, why not).
      result[:heap_prepared] = log.lines.grep(/heap prepared/).map { |line| line.strip[/mold.*/] }
      result[:log_errors] = log.lines.grep(/\b(ERROR|FATAL|Error|error:)|exited|killed/).first(10).map(&:strip)
      result[:log_tail] = group.log_tail(40) if result[:error] || !problems.empty?
    end
    fork_log = dir && File.join(dir, FORK_LOG)
    result[:herd_fork] = File.readlines(fork_log, chomp: true) if fork_log && File.exist?(fork_log)
    FileUtils.rm_rf(dir) if dir && !options[:keep]
  end

  # @return [String] a run in one line, for the driver's progress
  def line(run)
    return "ERROR #{run[:error].lines.first}" if run[:error]

    format("Σ PSS rest %.0f avg %.0f peak %.0f end %.0f MiB, mixed %s jobs/s, cpu %.1f jobs/s, errors %d, runs %d/%d%s",
      run[:rest_pss], run.dig(:memory, :average), run.dig(:memory, :peak), run.dig(:memory, :end),
      run.dig(:mixed, :jobs_per_s) || "–", run.dig(:cpu, :jobs_per_s),
      run.dig(:mixed, :errors).to_i + run.dig(:cpu, :errors).to_i, run[:jobs_run], run[:jobs_expected],
      run[:herd_fork] ? ", herd/fork prepared #{run[:herd_fork].size} forks" : "")
  end

  # Until the job system lists `expect` job processes (and Solid Queue its
  # dispatcher).
  def wait_ready(setup, group, dir, redis, timeout:)
    deadline = Bench::Clock.now + timeout
    loop do
      gone = group.exited
      raise "#{setup.name}: pids #{gone.join(", ")} exited during boot\n#{group.log_tail}" unless gone.empty?
      return if ready?(setup, dir, redis)
      raise "#{setup.name}: not ready within #{timeout} s\n#{group.log_tail}" if Bench::Clock.now > deadline

      sleep 0.25
    end
  end

  def ready?(setup, dir, redis)
    if setup.sidekiq?
      redis.call("SCARD", "processes").to_i >= setup.expect
    else
      kinds = solid_queue_processes(dir)
      kinds["Worker"].to_i >= setup.expect && kinds["Dispatcher"].to_i >= 1
    end
  end

  # One batch enqueued at once and drained: from just before the enqueue
  # to the end of its last job (the jobs' own CLOCK_MONOTONIC).
  # @return [Hash]
  def batch(kind, count, enqueuer, group, dir, options)
    before = done_lines(dir).size
    cpu = Bench::Processes.tree_cpu(group.leader)
    busy = Bench::Processes.system_busy
    enqueued = enqueuer.enqueue(kind, count)
    deadline = enqueued[:t1] + options[:batch_timeout]
    lines = nil
    loop do
      lines = done_lines(dir)[before..] || []
      break if lines.size >= count

      gone = group.exited
      raise "#{kind}: pids #{gone.join(", ")} exited with #{lines.size} of #{count} jobs done" unless gone.empty?
      raise "#{kind}: #{lines.size} of #{count} jobs done after #{options[:batch_timeout]} s" if Bench::Clock.now > deadline

      sleep 0.1
    end
    drained = Bench::Clock.now
    cpu = Bench::Processes.tree_cpu(group.leader) - cpu
    busy = Bench::Processes.system_busy - busy
    jobs = lines.map { |line| parse(line) }
    t_end = jobs.map { |job| job[:end] }.max
    seconds = t_end - enqueued[:t0]
    errors = jobs.reject { |job| job[:outcome] == "ok" }
    {jobs: count, t0: enqueued[:t0], t_end: t_end, enqueue_s: (enqueued[:t1] - enqueued[:t0]).round(3),
     seconds: seconds.round(3), jobs_per_s: (count / seconds).round(1),
     cpu_s: cpu.round(2), cpu_ms_per_job: (cpu * 1000 / count).round(2),
     tree_cores: (cpu / (drained - enqueued[:t0])).round(2), machine_busy_cores: (busy / (drained - enqueued[:t0])).round(2),
     pids: jobs.map { |job| job[:pid] }.uniq.size, errors: errors.size, error_samples: errors.first(3).map { |job| job[:outcome] },
     by_class: jobs.group_by { |job| job[:class] }.transform_values do |mine|
       {n: mine.size, wall_ms: Bench::Stats.median(mine.map { |job| job[:wall_ms] }).round(2),
        cpu_ms: Bench::Stats.median(mine.map { |job| job[:cpu_ms] }).round(2)}
     end}
  end

  # One line of DONE_LOG: end, pid, class, wall ms, thread CPU ms, major GCs since the process's first job, outcome.
  def parse(line)
    ended, pid, klass, wall, cpu, majors, outcome = line.chomp.split(" ", 7)
    {end: Float(ended), pid: Integer(pid), class: klass, wall_ms: Float(wall), cpu_ms: Float(cpu), majors: Integer(majors),
     outcome: outcome}
  end

  # The major GCs the processes that ran jobs ran between their first job and their last.
  # @return [Hash] :gcs, :processes
  def major_gcs(lines)
    by_pid = lines.map { |line| parse(line) }.group_by { |job| job[:pid] }
    {gcs: by_pid.sum { |_pid, jobs| jobs.map { |job| job[:majors] }.max }, processes: by_pid.size}
  end

  # Every process of the setup once the batches are drained: title, PSS, USS.
  def final(group)
    Bench::Sampler.rows(group.leader).map do |row|
      {pid: row.pid, title: row.title.to_s[0, 90], pss: (row.sample.pss / Bench::MIB).round(1),
       uss: (row.sample.uss / Bench::MIB).round(1)}
    end
  rescue Herd::Error
    []
  end

  # Solid Queue's books at the end: every job finished, none failed or left.
  def books(result, dir)
    result[:solid_queue] = {
      finished: solid_queue_count(dir, "solid_queue_jobs WHERE finished_at IS NOT NULL"),
      failed: solid_queue_count(dir, "solid_queue_failed_executions"),
      left: [solid_queue_count(dir, "solid_queue_ready_executions"), solid_queue_count(dir, "solid_queue_claimed_executions")].compact.sum
    }
  end

  # A process's title as herd plot classifies it by role: herd's titles
  # as they are; a Sidekiq process, a Solid Queue worker and the
  # supervisor named as the worker or monitor they are.
  def role_title(title)
    case title
    when /\Aherd / then title
    when /\Asidekiq / then "worker: #{title}"
    when /solid-queue-worker/ then "worker: #{title}"
    when /solid-queue-supervisor/ then "monitor: #{title}"
    else title
    end
  end
end
