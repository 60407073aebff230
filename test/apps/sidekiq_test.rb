# frozen_string_literal: true

require "test_helper"
require "json"
require "support/server_process"
require "support/procfs"
require_relative "support/app_server"
require_relative "support/redis_server"

# `herd sidekiq` with a real Sidekiq (8 on Ruby >= 3.2, 7.3 on 3.1, from the
# apps bundle) and a real redis-server the test starts on a UNIX socket.
# Every job records by jid that it started and that it finished, so each
# test counts the jobs lost and the jobs run twice through what operators
# do: stops, reforks, TTIN/TTOU, a worker killed mid-job.
class SidekiqJobWorkersTest < Herd::Test
  JOBS = File.expand_path("sidekiq", __dir__)
  READY = /monitor: ready: (\d+) workers running Sidekiq jobs/
  WORKER_READY = /monitor: worker (\d+) \(gen (\d+)\), pid (\d+) ready/

  def self.test_timeout
    180
  end

  def setup
    Herd::AppServer.check_bundle!
    @redis = Herd::RedisServer.new
    @servers = []
  end

  def teardown
    @servers.each(&:cleanup)
    @redis&.stop
  end

  def test_every_job_runs_once_in_processes_forked_from_one_mold
    server = start("-w", "2", "--", "-c", "3")
    jids = enqueue(40, 0.02)
    wait_for_finished(jids)
    assert_runs_once(jids)
    workers = worker_pids(server)
    assert_equal 2, workers.size
    assert_empty @redis.list("SMEMBERS", "pids") - workers.map(&:to_s), "jobs ran outside herd's workers"
    # Sidekiq's Web UI lists each process by its identity, with herd's label.
    processes = web_ui_processes
    assert_equal workers.sort, processes.map { |info| info["pid"] }.sort
    assert_equal ["herd worker 0 gen 0", "herd worker 1 gen 0"], processes.flat_map { |info| info["labels"] }.grep(/herd/).sort

    assert server.stop(:QUIT, timeout: 60).success?
    assert_empty @redis.list("SMEMBERS", "processes"), "a stopped worker leaves Sidekiq's process list"
  end

  def test_a_refork_under_load_loses_no_job_and_runs_none_twice
    server = start("-w", "2", "--", "-c", "3")
    jids = enqueue(150, 0.05)
    Herd::Waiting.wait_until("jobs under way", timeout: 60) { @redis.call("HLEN", "finished").to_i >= 20 }
    mark = server.mark
    server.signal(:USR2)
    server.wait_for(/monitor: worker \d+ \(gen 1\), pid \d+ ready/, after: mark, timeout: 90)
    wait_for_finished(jids)
    assert_runs_once(jids)
    Herd::Waiting.wait_until("generation 1 in Sidekiq's process list", timeout: 60) do
      web_ui_processes.flat_map { |info| info["labels"] }.grep(/herd/).sort == ["herd worker 0 gen 1", "herd worker 1 gen 1"]
    end
    identities = web_ui_processes.map { |info| info["identity"] }
    assert_equal 2, identities.uniq.size, "each process of generation 1 has an identity of its own"
  end

  # Each process reads Sidekiq's own configuration, as `sidekiq -C` does.
  def test_each_process_reads_sidekiqs_config_file
    config = File.join(@redis.dir, "sidekiq.yml")
    File.write(config, ":concurrency: 4\n:queues:\n  - critical\n")
    start("-w", "2", "--", "-C", config)
    jids = enqueue(10, 0.02, queue: "critical")
    wait_for_finished(jids)
    assert_runs_once(jids)
    processes = web_ui_processes
    assert_equal [["critical"]] * 2, processes.map { |info| info["queues"] }
    assert_equal [4, 4], processes.map { |info| info["concurrency"] }
  end

  # Sidekiq's own stop: the jobs in hand get its timeout (-t 1), then go
  # back to Redis; a new start runs them. Nothing is lost.
  def test_term_hands_unfinished_jobs_back_to_redis
    server = start("-w", "1", "--", "-c", "2", "-t", "1")
    jids = enqueue(2, 4)
    Herd::Waiting.wait_until("both jobs started", timeout: 60) { @redis.call("HLEN", "started").to_i == 2 }
    assert server.stop(:TERM, timeout: 60).success?
    assert_equal "0", @redis.call("HLEN", "finished")
    assert_equal 2, @redis.call("LLEN", "queue:default").to_i, "the unfinished jobs are back in their queue"

    start("-w", "1", "--", "-c", "2")
    wait_for_finished(jids)
    jids.each { |jid| assert_equal "1", @redis.call("HGET", "finished", jid), "job #{jid} finished once" }
  end

  # The monitor SIGKILLed mid-job: each worker gets TERM from the kernel
  # (its parent-death signal) and runs Sidekiq's stop, so the jobs still
  # running past Sidekiq's timeout go back to Redis instead of being lost.
  def test_a_killed_monitor_loses_no_job
    server = start("-w", "1", "--", "-c", "2", "-t", "1")
    enqueue(2, 4)
    Herd::Waiting.wait_until("both jobs started", timeout: 60) { @redis.call("HLEN", "started").to_i == 2 }
    worker = worker_pids(server).first
    Process.kill(:KILL, server.pid)
    Herd::Waiting.wait_until("the worker gone", timeout: 60) { !Herd::Procfs.alive?(worker) }
    assert_equal 2, @redis.call("LLEN", "queue:default").to_i, "the unfinished jobs are back in their queue"
  end

  # QUIT (and TERM) within Sidekiq's timeout: the jobs in hand finish.
  def test_quit_lets_the_jobs_in_hand_finish
    server = start("-w", "2", "--", "-c", "2")
    enqueue(4, 1.5)
    Herd::Waiting.wait_until("four jobs started", timeout: 60) { @redis.call("HLEN", "started").to_i == 4 }
    assert server.stop(:QUIT, timeout: 60).success?
    assert_equal 4, @redis.call("HLEN", "finished").to_i
    assert_empty server.processes_left
  end

  def test_ttin_and_ttou_add_and_retire_a_process_without_losing_its_jobs
    server = start("-w", "1", "--", "-c", "2")
    Herd::Waiting.wait_until("one process in Sidekiq's list", timeout: 30) { web_ui_processes.size == 1 }
    server.signal(:TTIN)
    Herd::Waiting.wait_until("two processes in Sidekiq's list", timeout: 60) { web_ui_processes.size == 2 }
    jids = enqueue(8, 0.5)
    Herd::Waiting.wait_until("jobs under way in both", timeout: 60) { @redis.call("HLEN", "started").to_i >= 3 }
    server.signal(:TTOU)
    Herd::Waiting.wait_until("one process again", timeout: 60) { web_ui_processes.size == 1 }
    wait_for_finished(jids)
    assert_runs_once(jids)
  end

  # Sidekiq OSS fetches with BRPOP: a process killed mid-job takes its
  # jobs with it (Sidekiq Pro's super_fetch would recover them). The
  # monitor replaces the process; the jobs that were running are the only
  # ones lost (docs/JOBS.md says so).
  def test_a_worker_killed_mid_job_loses_only_its_jobs_in_hand
    server = start("-w", "1", "--", "-c", "2")
    lost = enqueue(2, 30)
    Herd::Waiting.wait_until("both jobs started", timeout: 60) { @redis.call("HLEN", "started").to_i == 2 }
    worker = worker_pids(server).first
    mark = server.mark
    Process.kill(:KILL, worker)
    server.wait_for(WORKER_READY, after: mark, timeout: 60)
    jids = enqueue(4, 0.02)
    wait_for_finished(jids)
    assert_runs_once(jids)
    lost.each { |jid| assert_nil @redis.call("HGET", "finished", jid).then { |v| v unless v.empty? } }
    assert_equal 0, @redis.call("LLEN", "queue:default").to_i
  end

  def test_a_file_that_is_not_there_fails_the_start_with_one_line
    process = spawn_herd("-w", "1", "--", "-r", "./missing_jobs.rb")
    status = process.wait(timeout: 60)
    refute status.success?
    assert process.lines.any? { |line| line.include?("herd sidekiq: no app to load") }, process.lines.join
  end

  private

  def start(*args)
    process = spawn_herd(*args)
    process.wait_for(READY, timeout: 90)
    process
  end

  def spawn_herd(*herd_args)
    args = herd_args.dup
    at = args.index("--") || args.size
    args.insert(at + 1, "-r", "./jobs.rb") unless args.include?("-r")
    args.insert(at, "--") unless args.include?("--")
    process = Herd::ServerProcess.new(["bundle", "exec", "herd", "sidekiq", *args], dir: JOBS,
      env: Herd::AppServer.env("REDIS_URL" => @redis.url), unsetenv_others: true, timeout: 60)
    @servers << process
    process
  end

  # @return [Array<String>] the jids
  def enqueue(count, seconds, queue: "default")
    out, err, status = Open3.capture3(Herd::AppServer.env("REDIS_URL" => @redis.url),
      "bundle", "exec", "ruby", "enqueue.rb", count.to_s, seconds.to_s, queue, chdir: JOBS, unsetenv_others: true)
    assert status.success?, err
    out.lines(chomp: true).filter_map { |line| line[/\Ajid (\h+)\z/, 1] }
  end

  def wait_for_finished(jids)
    Herd::Waiting.wait_until("#{jids.size} jobs finished", timeout: 120,
      detail: -> { "finished #{@redis.call("HLEN", "finished")}" }) do
      (jids - @redis.list("HKEYS", "finished")).empty?
    end
  end

  def assert_runs_once(jids)
    started = @redis.list("HGETALL", "started").each_slice(2).to_h
    finished = @redis.list("HGETALL", "finished").each_slice(2).to_h
    twice = jids.select { |jid| started[jid] != "1" || finished[jid] != "1" }
    assert_empty twice, "jobs started or finished other than once: #{twice.map { |jid| [jid, started[jid], finished[jid]] }}"
  end

  def worker_pids(server)
    server.lines.filter_map { |line| (match = line.match(WORKER_READY)) && Integer(match[3]) }.uniq
      .select { |pid| Process.kill(0, pid) rescue false } # rubocop:disable Style/RescueModifier
  end

  # @return [Array<Hash>] what Sidekiq's Web UI shows of each live process
  def web_ui_processes
    @redis.list("SMEMBERS", "processes").filter_map do |identity|
      info = @redis.call("HGET", identity, "info")
      info && !info.empty? && JSON.parse(info).merge("concurrency" => @redis.call("HGET", identity, "concurrency").to_i)
    end
  end
end
