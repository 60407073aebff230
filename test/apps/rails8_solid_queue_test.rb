# frozen_string_literal: true

require "test_helper"
require "fileutils"
require "tmpdir"
require "json"
require "support/procfs"
require "support/server_process"
require_relative "support/app_server"

# `herd solid_queue` in the Rails 8 app as `rails new` makes it (Solid
# Queue, its SQLite queue database), in production: every job once, a
# refork under load, Solid Queue's process registry true across reforks
# and a SIGKILL. Rails 8 needs Ruby >= 3.2 (rakelib/apps.rake).
class RailsSolidQueueTest < Herd::Test
  JOB = File.expand_path("solid_queue/counted_job.rb", __dir__)
  READY = /monitor: ready: (\d+) workers running Solid Queue jobs/
  WORKER_READY = /monitor: worker (\d+) \(gen (\d+)\), pid (\d+) ready/
  ENV_VARS = {"RAILS_ENV" => "production"}.freeze

  def self.test_timeout
    240
  end

  def setup
    @dir = Dir.mktmpdir("herd-solid-queue")
    FileUtils.cp_r(File.join(Herd::AppServer.rails_app, "."), @dir)
    FileUtils.cp(JOB, File.join(@dir, "app/jobs"))
    FileUtils.mkdir_p(File.join(@dir, "tmp/jobs"))
    run_in_app("bin/rails", "db:prepare")
  end

  def teardown
    @server&.cleanup
    FileUtils.rm_rf(@dir)
  end

  def test_every_job_runs_once_and_the_registry_holds_only_live_processes
    start(workers: 2)
    Herd::Waiting.wait_until("four process rows", timeout: 60) { process_rows.size == 4 }
    rows = process_rows
    assert_equal %w[Dispatcher Scheduler Worker Worker], rows.map { |row| row[:kind] }.sort
    assert_equal ["herd worker 0 gen 0", "herd worker 1 gen 0"], rows.map { |row| row[:herd] }.uniq.sort
    assert_equal worker_pids.sort, rows.map { |row| row[:pid] }.uniq.sort

    # Each worker claims at most its 3 threads' worth per poll and polls
    # every second (queue.yml as generated): with 12 jobs of 1.5 s, the
    # first worker to poll is still busy when the other one polls.
    jobs = enqueue(12, 1.5)
    wait_for_finished(jobs)
    assert_runs_once(jobs)
    assert_equal worker_pids.sort, finished_pids(jobs).uniq.sort, "both herd workers ran jobs"

    assert @server.stop(:TERM, timeout: 60).success?
    assert_empty process_rows, "a stopped process deregisters"
  end

  def test_a_refork_under_load_loses_no_job_runs_none_twice_and_leaves_no_stale_row
    start(workers: 2)
    jobs = enqueue(120, 0.05)
    Herd::Waiting.wait_until("jobs under way", timeout: 60) { finished.size >= 10 }
    mark = @server.mark
    @server.signal(:USR2)
    [0, 1].each { |number| @server.wait_for(/monitor: worker #{number} \(gen 1\), pid \d+ ready/, after: mark, timeout: 120) }
    wait_for_finished(jobs)
    assert_runs_once(jobs)
    Herd::Waiting.wait_until("only generation 1's rows", timeout: 60,
      detail: -> { process_rows.inspect }) do
      rows = process_rows
      rows.size == 4 && rows.all? { |row| row[:herd].end_with?("gen 1") }
    end
  end

  # A worker SIGKILLed mid-job leaves its row and its claimed job behind;
  # its replacement prunes them at once, as Solid Queue prunes a process
  # whose heartbeat stopped: the job becomes a failed execution
  # (Solid Queue does not run it again by itself).
  def test_a_killed_worker_s_row_and_claims_are_pruned_by_its_replacement
    start(workers: 2)
    Herd::Waiting.wait_until("four process rows", timeout: 60) { process_rows.size == 4 }
    long = enqueue(1, 60)
    Herd::Waiting.wait_until("the long job started", timeout: 60) { started.size == 1 }
    victim = Integer(File.read(File.join(@dir, "tmp/jobs", started.first)))
    mark = @server.mark
    Process.kill(:KILL, victim)
    @server.wait_for(WORKER_READY, after: mark, timeout: 60)
    Herd::Waiting.wait_until("the dead worker's row pruned", timeout: 60, detail: -> { process_rows.inspect }) do
      process_rows.none? { |row| row[:pid] == victim } && process_rows.size == 4
    end
    assert_equal 1, count("solid_queue_failed_executions")
    assert_equal 0, count("solid_queue_claimed_executions")
    assert_empty finished & long.map { |id| "finished.#{id}" }
  end

  # `herd serve` with `jobs :solid_queue` in config/herd.rb: the web
  # worker and the job worker come from one mold, and a refork rolls both.
  def test_web_and_solid_queue_workers_from_one_mold
    File.write(File.join(@dir, "config/herd.rb"), <<~RUBY)
      listen "127.0.0.1:0"
      workers 1
      jobs :solid_queue, processes: 1
    RUBY
    @server = Herd::ServerProcess.new(["bundle", "exec", "herd", "serve", "-c", "config/herd.rb"], dir: @dir,
      env: Herd::AppServer.env(ENV_VARS), unsetenv_others: true, logs: {out: "herd.stdout.log", err: "herd.stderr.log"},
      timeout: 90)
    @server.wait_for(/monitor: ready: 2 workers serving \S+, and running Solid Queue jobs/)
    assert_includes @server.get("/up"), "HTTP/1.1 200 OK"
    jobs = enqueue(10, 0.02)
    wait_for_finished(jobs)
    job_worker = Integer(@server.wait_for(/monitor: worker 1 \(gen 0\), pid (\d+) ready/)[1])
    assert_equal [job_worker], finished_pids(jobs).uniq

    mark = @server.mark
    @server.signal(:USR2)
    [0, 1].each { |number| @server.wait_for(/monitor: worker #{number} \(gen 1\), pid \d+ ready/, after: mark, timeout: 120) }
    jobs = enqueue(5, 0.02)
    wait_for_finished(jobs)
    assert_includes @server.get("/up"), "HTTP/1.1 200 OK"
    Herd::Waiting.wait_until("only generation 1's rows", timeout: 60, detail: -> { process_rows.inspect }) do
      process_rows.map { |row| row[:herd] }.uniq == ["herd worker 1 gen 1"]
    end
  end

  private

  def start(workers:)
    @server = Herd::ServerProcess.new(["bundle", "exec", "herd", "solid_queue", "-w", workers.to_s], dir: @dir,
      env: Herd::AppServer.env(ENV_VARS), unsetenv_others: true, logs: {out: "herd.stdout.log", err: "herd.stderr.log"},
      timeout: 90)
    @server.wait_for(READY)
  end

  def run_in_app(*command)
    out, status = Open3.capture2e(Herd::AppServer.env(ENV_VARS), "bundle", "exec", *command, chdir: @dir,
      unsetenv_others: true)
    assert status.success?, out
    out
  end

  # @return [Array<String>] the job ids
  def enqueue(count, seconds)
    out = run_in_app("bin/rails", "runner", "#{count}.times { puts %(job \#{CountedJob.perform_later(#{seconds}).job_id}) }")
    out.lines(chomp: true).filter_map { |line| line[/\Ajob (\S+)\z/, 1] }
  end

  def started
    Dir.children(File.join(@dir, "tmp/jobs")).grep(/\Astarted\./)
  end

  def finished
    Dir.children(File.join(@dir, "tmp/jobs")).grep(/\Afinished\./)
  end

  def finished_pids(jobs)
    jobs.map { |id| Integer(File.read(File.join(@dir, "tmp/jobs", "finished.#{id}"))) }
  end

  def wait_for_finished(jobs)
    Herd::Waiting.wait_until("#{jobs.size} jobs finished", timeout: 120, detail: -> { "finished #{finished.size}" }) do
      (jobs.map { |id| "finished.#{id}" } - finished).empty?
    end
  end

  # Each job wrote its files once (a second run would find them written:
  # started and finished hold one pid each, and the queue keeps no job).
  # Solid Queue records a job's end just after the job's last line ran:
  # its books are waited on, not read once.
  def assert_runs_once(jobs)
    finished = "solid_queue_jobs WHERE finished_at IS NOT NULL AND class_name = 'CountedJob'"
    Herd::Waiting.wait_until("every job finished in Solid Queue's own books", timeout: 30,
      detail: -> { "#{count(finished)} of #{jobs.size}" }) do
      count(finished) == jobs.size && count("solid_queue_claimed_executions").zero?
    end
    assert_equal 0, count("solid_queue_failed_executions")
    assert_equal 0, count("solid_queue_ready_executions")
  end

  def worker_pids
    live = @server.lines.filter_map { |line| (match = line.match(WORKER_READY)) && Integer(match[3]) }
    live.select { |pid| Herd::Procfs.alive?(pid) }
  end

  def sqlite(sql)
    out, status = Open3.capture2e("sqlite3", "-json", File.join(@dir, "storage/production_queue.sqlite3"), sql)
    assert status.success?, out
    out.strip.empty? ? [] : JSON.parse(out, symbolize_names: true)
  end

  def count(from)
    sqlite("SELECT count(*) AS n FROM #{from}").first[:n]
  end

  # @return [Array<Hash>] kind, pid, and herd's label of each registered process
  def process_rows
    sqlite("SELECT kind, pid, metadata FROM solid_queue_processes").map do |row|
      {kind: row[:kind], pid: row[:pid], herd: JSON.parse(row[:metadata].to_s.empty? ? "{}" : row[:metadata])["herd"]}
    end
  end
end
