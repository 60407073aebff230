# frozen_string_literal: true

require_relative "server"
require_relative "client"
require_relative "../support/clock"
require_relative "../support/processes"
require_relative "../support/sampler"
require_relative "../support/stats"

module RailsBench
  # Log lines that mark a refork, per server.
  REFORKS = {"herd" => /refork \(.*promoting/, "pitchfork" => /refork condition met/,
             "puma" => /Starting worker refork/}.freeze

  module_function

  # @return [Hash] the latency statistics of the clients' records, ms
  def latency(records)
    seconds = records.map { |record| record[3] }
    pick = ->(q) { Bench::Stats.percentile(seconds, q)&.then { |value| (value * 1000).round(1) } }
    {p50: pick.call(0.50), p90: pick.call(0.90), p99: pick.call(0.99), p999: pick.call(0.999), max: pick.call(1.0)}
  end

  # @return [Array] the records that failed: no response, or not the status the scaffold answers
  def failures(records)
    records.reject { |kind, status, *| status == Client::EXPECTED[kind] }
  end

  # One server under the load: a fresh copy of the app, the server started,
  # Σ PSS sampled every `interval` s from the first request to the last,
  # the tree's CPU read at both ends, the server stopped.
  # @return [Hash]
  def run(server, template:, work:, requests:, interval:, workers:, round:)
    name = "#{server.name}-#{round}"
    dir = copy(template[:dir], work, name)
    result = {server: server.name, round: round}
    running = Running.new(server, dir: dir, workers: workers, log_path: File.join(work, "#{name}.log"))
    running.start
    result[:boot_s] = running.boot_seconds
    sampler = Bench::Sampler.new(running.pid, interval: interval, titles: true)
    first = sampler.take # at rest, booted
    client = Client.new(port: running.port, ids: template[:ids], requests: requests)
    cpu = Bench::Processes.tree_cpu(running.pid)
    ksmd = Bench::KSM.cpu_seconds
    started = Bench::Clock.now
    busy = Bench::Processes.system_busy
    sampler.start
    client.start
    records = client.wait
    finished = Bench::Clock.now
    cpu = Bench::Processes.tree_cpu(running.pid) - cpu
    # The merging a -ksm setup asks for is the kernel's work on its behalf.
    result[:ksmd_cpu_s] = (Bench::KSM.cpu_seconds - ksmd).round(2)
    cpu += result[:ksmd_cpu_s] if server.name.end_with?("-ksm")
    result[:busy_cores] = ((Bench::Processes.system_busy - busy) / (finished - started)).round(2) # everything on the machine
    result[:loadavg] = Bench::Report.loadavg
    sampler.stop
    bad = failures(records)
    answered = records.count { |record| record[1].positive? }
    result.merge!(
      requests: records.size, seconds: (finished - started).round(2), rps: (records.size / (finished - started)).round(1),
      cpu_s: cpu.round(2), cpu_ms_per_request: answered.positive? ? (cpu * 1000 / answered).round(2) : nil,
      latency_ms: latency(records), failed: bad.size, failures: bad.first(5).map { |r| r.values_at(0, 1, 4) },
      statuses: records.map { |r| r[1] }.tally.transform_keys(&:to_s),
      booted_pss: first && first[:pss],
      memory: Bench::Sampler.summary(sampler.samples, from: started),
      samples: sampler.samples.map { |s| [(s[:t] - started).round(2), s[:pss], s[:processes]] },
      # Per process, for the plot (herd plot's recording form): seconds, [title, PSS MiB]...
      recording: sampler.samples.select { |s| s[:rows] && s[:t] >= started }
        .map { |s| [(s[:t] - started).round(2), s[:rows].map { |_, title, pss| [title, pss] }] },
      final: final(running)
    )
    pattern = REFORKS.find { |prefix, _| server.name.start_with?(prefix) }&.last
    result[:reforks] = running.log.scan(pattern).size if pattern && !(server.name == "puma")
    result
  rescue => e
    client&.kill
    result.merge!(error: "#{e.class}: #{e.message}"[0, 3000])
  ensure
    sampler&.stop
    problems = running&.stop || []
    result[:stop_problems] = problems unless problems.empty?
    result[:log_tail] = running.log_tail(30) if running && (result[:error] || !problems.empty?)
    FileUtils.rm_rf(dir) if dir
  end

  # Every process of the tree at the end of the load, with its role and
  # whether it runs on jemalloc (the check that LD_PRELOAD reached it).
  def final(running)
    roles = running.processes.to_h { |process| [process[:pid], process.values_at(:role, :generation)] }
    Bench::Sampler.rows(running.pid).map do |row|
      role, generation = roles[row.pid]
      {pid: row.pid, title: row.title.to_s[0, 80], role: role, generation: generation,
       pss: (row.sample.pss / Bench::MIB).round(1), uss: (row.sample.uss / Bench::MIB).round(1), jemalloc: jemalloc?(row.pid)}
    end
  rescue Herd::Error
    []
  end

  # @return [Boolean, nil] whether the process maps libjemalloc, nil when it is gone
  def jemalloc?(pid)
    File.foreach("/proc/#{pid}/maps").any? { |line| line.include?("libjemalloc") }
  rescue SystemCallError
    nil
  end
end
