# frozen_string_literal: true

require "test_helper"
require "json"
require "support/prometheus_text"
require "herd/memory"
require "herd/cluster/children"
require "herd/cluster/json_writer"
require "herd/cluster/memory_policy"
require "herd/cluster/metrics"
require "herd/cluster/stats"
require "herd/cluster/telemetry"
require "herd/cluster/workload"

class TelemetryTest < Herd::Test
  def test_counters_deaths_by_signal_and_rollouts_with_reason_and_duration
    telemetry = Herd::Cluster::Telemetry.new
    telemetry.count(:timeouts)
    telemetry.worker_killed("KILL")
    telemetry.worker_killed("KILL")
    telemetry.worker_killed("SEGV")
    telemetry.rollout_started(:refork, "USR2", from_generation: 0, generation: 1)
    telemetry.rollout_ended(1, :ready)
    telemetry.rollout_started(:reload, "HUP", from_generation: 1, generation: 2)
    telemetry.rollout_ended(2, :failed)
    counters = telemetry.counters
    assert_equal [1, 3, 1, 1, 0, 1], counters.values_at(:timeouts, :worker_deaths_by_signal, :reforks, :reloads, :refork_failures, :reload_failures)
    assert_equal({"KILL" => 2, "SEGV" => 1}, telemetry.deaths_by_signal)
    refork, reload = telemetry.rollouts
    assert_equal [:refork, "USR2", 0, 1, :ready], refork.to_h.values_at(:kind, :reason, :from_generation, :generation, :outcome)
    assert_operator refork.duration, :>=, 0
    assert_equal :failed, reload.outcome
    assert_raises(ArgumentError) { telemetry.count(:nonsense) }
  end

  def test_history_is_bounded
    telemetry = Herd::Cluster::Telemetry.new
    30.times { |n| telemetry.rollout_started(:refork, "USR2", from_generation: n, generation: n + 1) }
    assert_equal Herd::Cluster::Telemetry::HISTORY, telemetry.rollouts.size
    assert_equal 30, telemetry.counters[:reforks]
  end
end

class MemoryPolicyTest < Herd::Test
  MIB = 1024 * 1024
  Child = Struct.new(:pid)

  def worker(uss_mib, shared_mib, pid: rand(100_000))
    sample = Herd::Memory::Sample.new(rss: (uss_mib + shared_mib) * MIB, pss: (uss_mib + shared_mib / 4) * MIB,
      private_dirty: uss_mib * MIB, shared_clean: shared_mib * MIB)
    Herd::Cluster::MemoryPolicy::Measured.new(Child.new(pid), sample)
  end

  def test_shared_below_fires_once_sharing_eroded
    policy = Herd::Cluster::MemoryPolicy.new(refork_when: {shared_below: 0.5})
    assert_nil policy.refork_reason(0, [worker(10, 90), worker(20, 80)])
    reason = policy.refork_reason(0, [worker(60, 40), worker(50, 50)])
    assert_equal "workers 45% shared, below shared_below 50%", reason
  end

  def test_uss_above_sums_the_workers
    policy = Herd::Cluster::MemoryPolicy.new(refork_when: {uss_above: 100})
    assert_nil policy.refork_reason(3, [worker(40, 50), worker(50, 50)])
    assert_match(/workers' USS 110\.0 MiB, above uss_above 100 MiB/, policy.refork_reason(3, [worker(60, 50), worker(50, 50)]))
  end

  # A generation over the threshold from its first sample would be
  # followed by one just like it: no refork loop, one note.
  def test_a_generation_that_starts_over_the_threshold_is_not_reforked_until_it_went_below
    policy = Herd::Cluster::MemoryPolicy.new(refork_when: {uss_above: 100})
    notes = []
    2.times { assert_nil(policy.refork_reason(1, [worker(200, 10)]) { |note| notes << note }) }
    assert_equal 1, notes.size
    assert_match(/generation 1 starts with workers' USS 200\.0 MiB.*will not be reforked for memory/, notes.first)
    assert_nil policy.refork_reason(1, [worker(50, 10)])
    assert policy.refork_reason(1, [worker(200, 10)])
    assert_nil policy.refork_reason(2, [worker(200, 10)]) # the next generation, again
  end

  def test_worker_memory_limit_picks_workers_over_it
    policy = Herd::Cluster::MemoryPolicy.new(worker_memory_limit: 100)
    fat = worker(101, 10)
    assert_equal [fat], policy.over_limit([worker(99, 10), fat])
    assert_empty Herd::Cluster::MemoryPolicy.new.over_limit([fat])
    refute Herd::Cluster::MemoryPolicy.new.active?
    assert_nil Herd::Cluster::MemoryPolicy.new(worker_memory_limit: 1).refork_reason(0, [fat])
  end
end

# /stats and /metrics from a monitor's state, without processes.
class StatsTest < Herd::Test
  MIB = 1024 * 1024
  Sampler = Struct.new(:latest)

  def setup
    @children = Herd::Cluster::Children.new
    @children.add(Herd::Cluster::Child.new(role: :mold, generation: 1, pid: 101, state: :ready))
    @busy = @children.add(Herd::Cluster::Child.new(role: :worker, number: 0, generation: 1, pid: 102, state: :ready,
      requests: 7, busy_since: Herd::Clock.now - 2, busy_with: "GET /orders?q=\"x\""))
    @children.add(Herd::Cluster::Child.new(role: :worker, number: 1, generation: 0, pid: 103, state: :ready, requests: 40))
    @children.add(Herd::Cluster::Child.new(role: :worker, number: 2, generation: 1, state: :spawning, requests: 0))
    @telemetry = Herd::Cluster::Telemetry.new
    @telemetry.count(:requests_retired, 100)
    @telemetry.worker_killed("KILL")
    @telemetry.rollout_started(:refork, "120 requests", from_generation: 0, generation: 1)
    @telemetry.rollout_ended(1, :ready)
  end

  def row(pid, uss, shared, title: "herd")
    sample = Herd::Memory::Sample.new(rss: (uss + shared) * MIB, pss: (uss + shared / 2) * MIB, private_dirty: uss * MIB,
      shared_clean: shared * MIB)
    Herd::Memory::Report::Row.new(pid: pid, ppid: 1, title: title, sample: sample)
  end

  def stats(report)
    Herd::Cluster::Stats.new(monitor_pid: 100, children: @children, workload: Herd::Cluster::Workload.new(nil),
      telemetry: @telemetry, sampler: Sampler.new(report), server: -> { {generation: 1, workers_target: 3} }).to_h
  end

  def test_stats_hold_every_process_generation_totals_and_counters
    report = Herd::Memory::Report.new([row(100, 4, 2), row(101, 2, 20), row(102, 6, 18), row(103, 12, 12),
      row(Process.pid, 1, 1, title: "sh -c convert")], tree: true)
    stats = JSON.parse(JSON.generate(stats(report)))
    processes = stats["processes"].to_h { |process| [process["pid"], process] }
    assert_equal %w[monitor mold worker worker worker other], stats["processes"].map { |process| process["role"] }
    busy = processes.fetch(102)
    assert_equal ["busy", "GET /orders?q=\"x\"", 7, 6 * MIB], busy.values_at("state", "request", "requests", "uss")
    assert_operator busy["request_age"], :>=, 2
    assert_equal "idle", processes.fetch(103)["state"]
    assert_equal 0.5, processes.fetch(103)["shared_ratio"]
    starting = stats["processes"].find { |process| process["pid"].nil? }
    assert_equal ["starting", nil], starting.values_at("state", "pss")
    assert_equal "sh -c convert", processes.fetch(Process.pid)["title"]
    gen0, gen1 = stats["generations"]
    assert_equal [0, 1, 1, 18 * MIB], gen0.values_at("generation", "processes", "workers", "pss")
    assert_equal [1, 3, 2, (12 + 15) * MIB], gen1.values_at("generation", "processes", "workers", "pss")
    assert_equal report.total.pss, stats["memory"]["pss"]
    assert_in_delta 30.0 / 48, stats["memory"]["workers_shared_ratio"], 0.001
    assert_equal 147, stats["counters"]["requests"]
    assert_equal({"total" => 1, "by_signal" => {"KILL" => 1}}, stats["counters"]["worker_deaths_by_signal"])
    assert_equal [["refork", "120 requests", 0, 1, "ready"]],
      stats["rollouts"].map { |r| r.values_at("kind", "reason", "from_generation", "generation", "outcome") }
  end

  # rollout_max_surge: a replacement starting next to the worker it takes over from.
  def test_a_surge_replacement_names_the_worker_it_replaces
    @children.workers.find { |child| child.state == :spawning }.replaces = @children.by_pid(103)
    report = Herd::Memory::Report.new([row(100, 4, 2), row(101, 2, 20), row(102, 6, 18), row(103, 12, 12)], tree: true)
    rows = JSON.parse(JSON.generate(stats(report)))["processes"]
    assert_equal [103], rows.filter_map { |process| process["replaces"] }
    assert_equal "starting", rows.find { |process| process["replaces"] }["state"]
  end

  def test_metrics_are_valid_exposition_and_say_what_stats_say
    report = Herd::Memory::Report.new([row(100, 4, 2), row(101, 2, 20), row(102, 6, 18), row(103, 12, 12)], tree: true)
    families = Herd::PrometheusText.parse(Herd::Cluster::Metrics.new(stats(report)).to_s)
    value = ->(name, labels = {}) { families.fetch(name).samples.find { |s| labels <= s.labels }&.value }
    assert_equal 147, value.call("herd_requests_total")
    assert_equal "counter", families.fetch("herd_requests_total").type
    assert_equal 1, value.call("herd_worker_deaths_total", "signal" => "KILL")
    assert_equal 6 * MIB, value.call("herd_process_uss_bytes", "role" => "worker", "worker" => "0", "generation" => "1")
    assert_equal 1, value.call("herd_worker_busy", "worker" => "0")
    assert_equal 0, value.call("herd_worker_busy", "worker" => "1")
    assert_equal report.total.pss, value.call("herd_tree_pss_bytes")
    assert_equal 27 * MIB, value.call("herd_generation_pss_bytes", "generation" => "1")
    assert_operator value.call("herd_last_rollout_duration_seconds", "kind" => "refork"), :>=, 0
    families.each_value { |family| assert family.help && family.type, "#{family.name} has HELP and TYPE" }
  end

  def test_before_the_first_sample_memory_is_null_and_metrics_still_parse
    stats = stats(nil)
    assert_nil stats["memory"]["pss"]
    assert(stats["processes"].all? { |process| process["pss"].nil? })
    families = Herd::PrometheusText.parse(Herd::Cluster::Metrics.new(stats).to_s)
    assert_empty families.fetch("herd_tree_pss_bytes").samples
  end
end

class JSONWriterTest < Herd::Test
  def test_what_it_writes_parses_back_to_the_same_document
    document = {"a" => [1, -2.5, nil, true, false], :sym => "quote \" backslash \\ newline \n tab \t bell \a é ✓",
                "nested" => {"empty" => {}, "list" => []}, "inf" => Float::INFINITY}
    parsed = JSON.parse(Herd::Cluster::JSONWriter.generate(document))
    assert_equal({"a" => [1, -2.5, nil, true, false], "sym" => "quote \" backslash \\ newline \n tab \t bell \a é ✓",
                  "nested" => {"empty" => {}, "list" => []}, "inf" => nil}, parsed)
    assert_equal "\"\u{fffd}\"", Herd::Cluster::JSONWriter.generate("\xff".b.force_encoding("UTF-8"))
    assert_raises(TypeError) { Herd::Cluster::JSONWriter.generate(Object.new) }
  end
end
