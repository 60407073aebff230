# frozen_string_literal: true

require "test_helper"
require "herd/cluster/worker"
require "herd/cluster/scoreboard"
require "herd/cluster/protocol"
require "herd/jobs/tally"

# A job worker reports from its main thread, once a tick, how many jobs
# are done and which run (Cluster::Worker#progress). The monitor must see
# every new count, whether or not the running jobs changed meanwhile: it
# is what refork_after and /stats count.
class WorkerProgressTest < Herd::Test
  JobService = Struct.new(:name) do
    def job_worker?(_number, _config)
      true
    end
  end

  # Records what a worker sends the monitor.
  class LinkStub
    attr_reader :messages

    def initialize
      @messages = []
    end

    def send_message(message)
      @messages << message
    end
  end

  def setup
    @title = Process.argv0
    @link = LinkStub.new
  end

  def teardown
    @board&.instance_variable_get(:@memory)&.free
    Process.setproctitle(@title)
  end

  def test_the_scoreboard_sees_each_new_count_while_the_running_jobs_change
    @board = Herd::Cluster::Scoreboard.allocate(1)
    skip "no mmap here" unless @board
    worker = worker_with(@board)
    worker.progress(0, %w[jobs AJob])
    assert_equal "jobs AJob", @board.current(0)[1]
    worker.progress(3, ["jobs", "BJob x2"])
    assert_equal 3, @board.requests(0)
    assert_equal "jobs BJob x2", @board.current(0)[1]
    worker.progress(5, ["jobs", "BJob x2"])
    assert_equal 5, @board.requests(0)
    worker.progress(7, nil)
    assert_equal 7, @board.requests(0)
    assert_nil @board.current(0)
    worker.progress(8, nil)
    assert_equal 8, @board.requests(0), "jobs that started and ended between two ticks count"
  end

  # With a slot, the job threads write what runs as each job starts and
  # ends; the main thread's report only counts, and never clears a label
  # a job thread wrote after the tally it read.
  def test_job_threads_write_the_running_jobs_at_once
    @board = Herd::Cluster::Scoreboard.allocate(1)
    skip "no mmap here" unless @board
    worker = worker_with(@board)
    tally = Herd::Jobs::Tally.new
    worker.report_jobs_as_they_run(tally, "jobs")
    Thread.new { tally.start("AJob") }.join
    assert_equal "jobs AJob", @board.current(0)[1]
    worker.progress(0, nil)
    assert_equal "jobs AJob", @board.current(0)[1], "a tick's stale report leaves the label"
    tally.start("BJob")
    tally.finish
    assert_equal "jobs AJob", @board.current(0)[1]
    worker.progress(1, %w[jobs AJob])
    assert_equal 1, @board.requests(0)
    assert_empty @link.messages
  end

  def test_without_a_slot_the_ticks_report_alone
    worker = worker_with(nil)
    tally = Herd::Jobs::Tally.new
    worker.report_jobs_as_they_run(tally, "jobs")
    tally.start("AJob")
    assert_empty @link.messages
    worker.progress(0, %w[jobs AJob])
    assert_equal ["jobs AJob"], @link.messages.grep(Herd::Cluster::Protocol::Busy).map(&:label)
  end

  def test_the_link_carries_each_new_count_while_the_running_jobs_change
    worker = worker_with(nil)
    worker.progress(0, %w[jobs AJob])
    worker.progress(3, ["jobs", "BJob x2"])
    worker.progress(3, ["jobs", "BJob x2"])
    worker.progress(4, nil)
    worker.progress(6, nil)
    counts = @link.messages.grep(Herd::Cluster::Protocol::Idle).map(&:requests)
    labels = @link.messages.grep(Herd::Cluster::Protocol::Busy).map(&:label)
    assert_equal [0, 3, 4, 6], counts, "one message per change, none when nothing changed"
    assert_equal ["jobs AJob", "jobs BJob x2"], labels
  end

  private

  def worker_with(board)
    context = Herd::Cluster::Context.new(config: nil, log: nil, monitor_pid: Process.pid, scoreboard: board)
    Herd::Cluster::Worker.new(number: 0, generation: 0, slot: board && 0, link: @link,
      service: JobService.new("spool"), app: nil, context: context)
  end
end
