# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "support/server_harness"
require "support/control_client"

# `herd serve` with `jobs` in its config file: web workers and job workers
# forked from one mold (the job system here is the spool of
# test/fixtures/jobs/spool_engine.rb). Each kind keeps its own rules:
# TERM ends a web worker at once and a job worker gracefully, TSTP quiets
# job workers only, `timeout` applies to requests only. A refork rolls both.
class BesideWebTest < Herd::Test
  include Herd::ServerTest
  include Herd::ControlClient

  ENGINE = File.join(Herd::Test::ROOT, "test/fixtures/jobs/spool_engine.rb")
  WORKER_READY = /monitor: worker (\d+) \(gen (\d+)\), pid (\d+) ready/

  def setup
    @spool = Dir.mktmpdir("herd-spool")
  end

  def teardown
    super
    FileUtils.rm_rf(@spool)
  end

  def test_web_and_job_workers_from_one_mold_through_a_refork
    start
    assert_match(/\Apid=\d+ path=\/\n\z/, @server.body("/"))
    enqueue(20, 0.02)
    wait_until("20 jobs done") { done.size == 20 }
    web, job = pids_of(0)
    assert_equal [job], done.map { |name| Integer(name[/\.(\d+)\z/, 1]) }.uniq, "only the job worker runs jobs"
    assert_equal "pid=#{web} path=/\n", @server.body("/")

    refork_to(1, workers: 2)
    enqueue(10, 0.02, from: 20)
    wait_until("30 jobs done") { done.size == 30 }
    _, job1 = pids_of(1)
    assert_includes done.map { |name| Integer(name[/\.(\d+)\z/, 1]) }, job1, "generation 1's job worker runs jobs"
  end

  def test_term_ends_a_web_worker_at_once_and_a_job_worker_gracefully
    start
    web, job = pids_of(0)
    enqueue(1, 1)
    wait_until("the job claimed") { Dir.children(File.join(@spool, "claimed")).size == 1 }
    mark = @server.mark
    Process.kill(:TERM, job)
    Process.kill(:TERM, web)
    @server.wait_for(/worker 1 \(gen 0\), pid #{job} exited with status 0/, after: mark)
    @server.wait_for(/worker 0 \(gen 0\), pid #{web} exited/, after: mark)
    assert_equal 1, done.size, "the job worker finished its job before it left"
  end

  def test_tstp_quiets_the_job_workers_only
    start
    mark = @server.mark
    @server.signal(:TSTP)
    @server.wait_for(/TSTP: quieting 1 job worker\(s\)/, after: mark)
    @server.wait_for(/worker 1 \(gen 0\): SIGTSTP: quiet/, after: mark)
    assert_match(/\Apid=\d+ path=\/\n\z/, @server.body("/"))
    refute(@server.lines[mark..].any? { |line| line.include?("worker 0 (gen 0): SIGTSTP") })
  end

  def test_a_bad_jobs_line_is_one_line_at_start
    out, err, status = herd_cli("serve", "-c", config_file("jobs :resque, processes: 1\n"), "-l", "127.0.0.1:0",
      chdir: @spool)
    refute status.success?, out
    assert_equal 1, err.lines.size, err
    assert_includes err, "jobs: :resque is not a job system herd runs"
  end

  private

  def start
    config = <<~RUBY
      require #{ENGINE.inspect}
      workers 1
      timeout 5
      jobs SpoolEngine.new(#{@spool.inspect}), processes: 1
    RUBY
    serve(config: config)
    [0, 1].each { |number| @server.wait_for(/worker #{number} \(gen 0\), pid \d+ ready/) }
  end

  def config_file(text)
    File.write(File.join(@spool, "config.ru"), "run ->(env) { [200, {}, []] }\n")
    File.join(@spool, "herd.rb").tap { |path| File.write(path, text) }
  end

  # @return [Array(Integer, Integer)] the web worker's and the job worker's pids in `generation`
  def pids_of(generation)
    pids = @server.lines.filter_map do |line|
      (match = line.match(WORKER_READY)) && Integer(match[2]) == generation && [Integer(match[1]), Integer(match[3])]
    end.to_h
    [pids.fetch(0), pids.fetch(1)]
  end

  def enqueue(count, seconds, from: 0)
    (from...(from + count)).each do |n|
      path = File.join(@spool, "queue", "job-#{n}")
      File.write("#{path}.tmp", seconds.to_s)
      File.rename("#{path}.tmp", path)
    end
  end

  def done
    Dir.children(File.join(@spool, "done"))
  end

  def wait_until(what, &block)
    Herd::Waiting.wait_until(what, timeout: 30, &block)
  end
end
