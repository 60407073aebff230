# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "support/server_process"
require "support/control_client"
require "support/procfs"

# herd's process model running job workers (Herd::Jobs) around a job
# system small enough to read (test/fixtures/jobs/spool_engine.rb: jobs are
# files, claimed by rename): stops finish the jobs in hand, a refork
# finishes them before the fork, TSTP quiets, refork_after counts jobs,
# and /stats shows what runs. test/apps/sidekiq_test.rb does the same
# with Sidekiq and Redis.
class JobWorkersTest < Herd::Test
  include Herd::ControlClient

  RUNNER = File.join(Herd::Test::ROOT, "test/fixtures/jobs/spool_workers.rb")
  READY = /monitor: ready: (\d+) workers running spool jobs/
  WORKER_READY = /monitor: worker (\d+) \(gen (\d+)\), pid (\d+) ready/

  def setup
    @spool = Dir.mktmpdir("herd-spool")
  end

  def teardown
    @server&.cleanup
    FileUtils.rm_rf(@spool)
  end

  def test_term_to_the_monitor_lets_the_jobs_in_hand_finish
    start(workers: 2)
    enqueue(4, 0.6)
    wait_until("4 jobs claimed") { claimed.size == 4 }
    assert @server.stop(:TERM).success?
    assert_equal 4, done.size
    assert_empty claimed
    assert_empty @server.processes_left
  end

  # Sidekiq's and Solid Queue's processes stop gracefully on TERM: so
  # does a job worker, which the monitor then replaces.
  def test_term_to_a_worker_finishes_its_job_and_the_monitor_replaces_it
    start(workers: 1)
    enqueue(1, 0.6)
    wait_until("the job claimed") { claimed.size == 1 }
    worker = worker_pids.last
    mark = @server.mark
    Process.kill(:TERM, worker)
    @server.wait_for(/worker 0 \(gen 0\), pid #{worker} exited with status 0/, after: mark)
    @server.wait_for(WORKER_READY, after: mark)
    assert_equal ["job-0.#{worker}"], done
  end

  # refork_after counts jobs; the promoted worker finishes its jobs in hand
  # before it forks the next mold, then goes on. No job is lost or run twice.
  def test_a_refork_after_a_count_of_jobs_finishes_the_jobs_in_hand_first
    start(workers: 2, config: "refork_after [10]\n")
    enqueue(60, 0.05)
    @server.wait_for(/mold \(gen 1\), pid \d+ ready/, timeout: 60)
    @server.wait_for(/worker \d+ \(gen 1\), pid \d+ ready/, timeout: 60)
    wait_until("60 jobs done", timeout: 60) { done.size == 60 }
    assert_equal (0...60).map { |n| "job-#{n}" }.sort, done.map { |name| name[/\Ajob-\d+/] }.sort
    assert_empty claimed
  end

  # The first mold of a reforking server seals malloc's free chunks too
  # (job workers' default): its workers' mallocs land in fresh memory, not
  # in holes of pages they share.
  def test_the_first_mold_of_a_reforking_job_server_seals_mallocs_free_chunks
    start(workers: 1, config: "refork_after [1000]\n")
    line = @server.lines.join[/mold \(gen 0\): heap prepared.*/]
    refute_nil line, @server.lines.join
    refute_match(/free chunks left free/, line)
    assert_match(/malloc free chunks sealed|free chunks left alone/, line) if Herd::Heap::Malloc.unsupported.nil?
  end

  def test_hup_boots_a_fresh_mold_and_rolls_the_workers_onto_it
    start(workers: 2)
    enqueue(30, 0.05)
    @server.signal(:HUP)
    @server.wait_for(/mold \(gen 1\), pid \d+ ready/)
    [0, 1].each { |number| @server.wait_for(/worker #{number} \(gen 1\), pid \d+ ready/) }
    wait_until("30 jobs done") { done.size == 30 }
    assert_empty claimed
  end

  def test_tstp_quiets_every_worker_until_it_stops
    start(workers: 2)
    mark = @server.mark
    @server.signal(:TSTP)
    @server.wait_for(/TSTP: quieting 2 job worker\(s\)/, after: mark)
    [0, 1].each { |number| @server.wait_for(/worker #{number} \(gen 0\): SIGTSTP: quiet/, after: mark) }
    enqueue(2, 0.01)
    sleep 0.5 # what the test waits for is nothing happening
    assert_equal 2, queued.size, "a quiet worker takes no new job:\n#{@server.lines.join}"
    assert @server.stop(:QUIT).success?
    assert_equal 2, queued.size
  end

  # The monitor SIGKILLed: its job workers finish the jobs in hand (a
  # Sidekiq worker would hand them back to Redis) before they leave, where
  # a web worker leaves at once.
  def test_job_workers_finish_their_jobs_when_the_monitor_is_killed
    start(workers: 2)
    workers = worker_pids
    enqueue(2, 1)
    wait_until("2 jobs claimed") { claimed.size == 2 }
    Process.kill(:KILL, @server.pid)
    wait_until("the workers gone", timeout: 30) { workers.none? { |pid| Herd::Procfs.alive?(pid) } }
    assert_equal 2, done.size, "the jobs in hand finished"
    assert_empty claimed
  end

  # The job threads write what runs on the scoreboard as each job starts:
  # a worker killed before its main thread's next report is known to have
  # been running the job it took.
  def test_a_job_worker_killed_right_after_taking_a_job_is_known_to_run_it
    start(workers: 1)
    worker = worker_pids.last
    mark = @server.mark
    enqueue(1, 30)
    started = File.join(@spool, "started.log")
    wait_until("the job started") { File.exist?(started) && File.read(started).include?("job-0") }
    Process.kill(:KILL, worker)
    @server.wait_for(/worker 0 \(gen 0\), pid #{worker} was killed by SIGKILL while serving jobs SpoolJob \(\d+(?:\.\d+)?s\)/,
      after: mark)
  end

  # A quiet worker promoted to the next mold stays quiet after the fork.
  def test_a_quiet_worker_stays_quiet_through_a_refork
    start(workers: 1)
    mark = @server.mark
    @server.signal(:TSTP)
    @server.wait_for(/worker 0 \(gen 0\): SIGTSTP: quiet/, after: mark)
    @server.signal(:USR2)
    @server.wait_for(/mold \(gen 1\), pid \d+ ready/, after: mark)
    enqueue(1, 0.01)
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/, after: mark)
    wait_until("the job done by generation 1") { done.size == 1 }
    gen0 = Integer(@server.lines.join[/worker 0 \(gen 0\), pid (\d+) ready/, 1])
    refute done.first.end_with?(".#{gen0}"), "the quiet worker took no job"
  end

  def test_stats_count_jobs_and_show_the_jobs_running
    control = "unix:#{File.join(@spool, "control.sock")}"
    start(workers: 1, config: "control_listen #{control.inspect}\n")
    enqueue(2, 2)
    # Each job thread writes the label as its job starts: one job, then both.
    stats = wait_for_stats(control, what: "a worker busy with both jobs") do |document|
      document["processes"].any? { |row| row["role"] == "worker" && row["state"] == "busy" && row["request"] == "jobs SpoolJob x2" }
    end
    worker = stats["processes"].find { |row| row["role"] == "worker" }
    stats = wait_for_stats(control, what: "two jobs counted", timeout: 30) do |document|
      document["processes"].any? { |row| row["role"] == "worker" && row["requests"] == 2 && row["state"] == "idle" }
    end
    refute_nil stats
    # The job threads count on the scoreboard; the title follows at the main thread's next tick.
    wait_until("the title counts 2 jobs") { Herd::Memory::ProcessTree.new.title(worker["pid"]) == "herd worker 0 (gen 0) jobs=2" }
  end

  private

  def start(workers:, config: nil)
    args = [RbConfig.ruby, "-I", File.join(Herd::Test::ROOT, "lib"), RUNNER, @spool, workers.to_s]
    if config
      File.write(File.join(@spool, "herd.rb"), config)
      args << File.join(@spool, "herd.rb")
    end
    @server = Herd::ServerProcess.new(args, dir: @spool, timeout: 30)
    @server.wait_for(READY)
  end

  def enqueue(count, seconds)
    count.times do |n|
      path = File.join(@spool, "queue", "job-#{n}")
      File.write("#{path}.tmp", seconds.to_s)
      File.rename("#{path}.tmp", path)
    end
  end

  %w[queued claimed done].zip(%w[queue claimed done]).each do |name, dir|
    define_method(name) { Dir.children(File.join(@spool, dir)).reject { |file| file.end_with?(".tmp") }.sort }
  end

  def worker_pids
    @server.lines.filter_map { |line| (match = line.match(WORKER_READY)) && Integer(match[3]) }
  end

  def wait_until(what, timeout: 20, &block)
    Herd::Waiting.wait_until(what, timeout: timeout, &block)
  end
end
