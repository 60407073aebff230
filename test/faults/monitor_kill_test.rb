# frozen_string_literal: true

require "test_helper"
require "json"

# SIGKILL of the monitor at randomized moments: idle, while booting, right
# after TTIN (a worker being double-forked), right after USR2 (a refork).
# Every process of the tree must be gone and the port free within 2 s.
#
# The rounds run in test/support/fault_runner.rb, a child subreaper: an
# orphan is reparented to it, so it sees every process that survived.
# HERD_FAULT_SEED=N replays a run's moments and delays.
class FaultMonitorKillTest < Herd::Test
  RUNNER = File.expand_path("../support/fault_runner.rb", __dir__)
  # moment => [rounds, delay range after it in seconds]. A worker is
  # double-forked and adopted ~10-60 ms after TTIN, a refork takes ~0.5-1 s
  # on a 2-core machine. A quarter of each moment's rounds have no delay.
  PLAN = {
    "idle" => [12, 0.0..0.3],
    "boot" => [8, 0.0..0.4],
    "spawn" => [28, 0.0..0.06],
    "refork" => [22, 0.0..0.9]
  }.freeze
  # Runners at once (a boot is mostly one core's work): the rounds are split
  # between them.
  RUNNERS = 2

  def self.test_timeout
    300
  end

  def teardown
    (@runners || []).each do |runner|
      Process.kill(:KILL, -runner) # the runner's group: it and every herd process it started
      Process.wait(runner)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    end
  end

  def test_sigkill_of_the_monitor_at_random_moments_leaves_no_process_and_frees_the_port
    seed = Integer(ENV.fetch("HERD_FAULT_SEED") { Random.new_seed % 1_000_000 })
    random = Random.new(seed)
    rounds = PLAN.flat_map do |moment, (count, delays)|
      Array.new(count) { |index| {moment: moment, delay: (index % 4).zero? ? 0.0 : random.rand(delays).round(4)} }
    end.shuffle(random: random)
    results = run_rounds(rounds)

    failed = results.reject { |result| result["left"].empty? && result["port_free"] }
    by_moment = results.group_by { |result| result["moment"] }.map do |moment, group|
      "#{moment}=#{group.count { |result| result["left"].empty? && result["port_free"] }}/#{group.size}"
    end
    slowest = results.filter_map { |result| result["clean_after"] }.max
    phases = results.group_by { |result| result["phase"] }.map { |phase, group| "#{phase}: #{group.size}" }
    $stdout.puts "\n[faults] monitor SIGKILL (seed #{seed}): rounds=#{results.size} clean=#{results.size - failed.size} " \
      "failed=#{failed.size} explained=0 by_moment: #{by_moment.join(" ")} slowest_cleanup=#{slowest}s\n" \
      "[faults]   killed while: #{phases.sort.join(", ")}"

    assert_equal rounds.size, results.size, "the runner stopped early"
    assert failed.empty?, "#{failed.size} rounds where a process outlived the monitor by 2 s or the port stayed taken " \
      "(HERD_FAULT_SEED=#{seed} replays them):\n#{failed.map { |result| describe(result) }.join("\n")}"
  end

  private

  def run_rounds(rounds)
    @runners = []
    readers = rounds.each_slice((rounds.size / RUNNERS.to_f).ceil).map do |share|
      reader, writer = IO.pipe
      options = JSON.generate(root: ROOT, workers: 2, rounds: share)
      @runners << Process.spawn(RbConfig.ruby, "-I", File.join(ROOT, "lib"), RUNNER, options, out: writer, pgroup: true)
      writer.close
      reader
    end
    results = readers.each_with_index.map do |reader, runner|
      Thread.new { reader.each_line.map { |line| JSON.parse(line).merge("runner" => runner) } }
    end.flat_map(&:value)
    @runners.dup.each do |runner|
      _, status = Process.wait2(runner)
      @runners.delete(runner)
      assert status.success?, "a runner failed: #{status.inspect}"
    end
    results
  ensure
    readers&.each(&:close)
  end

  def describe(result)
    left = result["left"].map { |process| "pid #{process["pid"]} (#{process["state"]}, ppid #{process["ppid"]}): #{process["title"]}" }
    log = Array(result["log"]).last(6).map { |line| "      #{line}" }
    ["runner #{result["runner"]} round #{result["round"]}: #{result["moment"]} + #{result["delay"]}s (#{result["phase"]}; last log line: #{result["last_line"]})",
      "    port #{result["port"]} #{result["port_free"] ? "free" : "still taken"} 2 s after the kill",
      *left.map { |line| "    alive: #{line}" }, *log].join("\n")
  end
end
