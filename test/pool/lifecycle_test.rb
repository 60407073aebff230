# frozen_string_literal: true

require "test_helper"
require "support/procfs"
require "support/waiting"

class PoolLifecycleTest < Herd::Test
  # A parent script that announces its workers' pids on stdout and then waits
  # inside a map that never ends.
  STUCK_PARENT = <<~RUBY
    require "herd"
    $stdout.sync = true
    trap_mode = ARGV[0]
    begin
      Herd.map(1..4, processes: 2, chunk_size: 1, shutdown_timeout: 1,
        start: ->(_, index) { puts "started \#{index}" if index == 1 }) do |i|
        puts "worker \#{Process.pid}"
        sleep
      end
    rescue Interrupt, SignalException => e
      children = Dir["/proc/\#{Process.pid}/task/*/children"].flat_map { |f| File.read(f).split }
      puts "rescued \#{e.class} children=[\#{children.join(",")}]"
      raise
    end
  RUBY

  # Yields the stuck parent's pid, its workers' pids and its output; kills
  # and reaps it afterwards whatever the test did.
  def with_stuck_parent(env: {})
    reader, writer = IO.pipe
    pid = Process.spawn(PLAIN_RUBY.merge(env), RbConfig.ruby, "-I", File.join(ROOT, "lib"), "-e", STUCK_PARENT, out: writer, err: File::NULL)
    writer.close
    workers = []
    until workers.size == 2
      line = reader.gets or flunk("the parent script ended early")
      workers << Integer(line.split.last) if line.start_with?("worker")
    end
    yield pid, workers, reader
  ensure
    begin
      Process.kill(:KILL, pid)
      Process.wait(pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil # the test reaped it
    end
    reader&.close
  end

  def assert_gone(pids)
    Herd::Waiting.wait_until("processes #{pids} gone", timeout: 10, detail: -> { "alive: #{pids.select { |pid| Herd::Procfs.alive?(pid) }}" }) do
      pids.none? { |pid| Herd::Procfs.alive?(pid) }
    end
  end

  {"INT" => "Interrupt", "TERM" => "SignalException"}.each do |signal, error|
    define_method("test_#{signal}_in_the_parent_stops_and_reaps_every_worker") do
      with_stuck_parent do |pid, workers, reader|
        Process.kill(signal, pid)
        rescued = reader.each_line.find { |line| line.start_with?("rescued") }
        assert_equal "rescued #{error} children=[]", rescued&.chomp, "every worker reaped before re-raising"
        _, status = Process.wait2(pid)
        refute status.success?
        assert_gone(workers)
      end
    end
  end

  # The workers sleep inside the job: only PR_SET_PDEATHSIG ends them, set
  # through the C extension where it is built and through Fiddle without it.
  def test_sigkill_of_the_parent_leaves_no_worker_behind
    [{}, {"HERD_C_EXTENSION" => "0"}].each do |env|
      with_stuck_parent(env: env) do |pid, workers, _|
        Process.kill(:KILL, pid)
        Process.wait(pid)
        assert_gone(workers)
      end
    end
  end

  def test_workers_do_not_run_the_parents_at_exit_hooks_unless_asked
    code = <<~RUBY
      require "herd"
      $stdout.sync = true
      at_exit { puts "at_exit in \#{Process.pid == $parent ? "parent" : "worker"}" }
      $parent = Process.pid
      Herd.map(1..4, processes: 2, run_at_exit: ARGV[0] == "run") { |i| i }
    RUBY
    out, err, = ruby_run(code, "skip")
    assert_equal ["at_exit in parent"], out.lines(chomp: true), err
    out, = ruby_run(code, "run")
    assert_equal 2, out.lines.count("at_exit in worker\n")
  end

  def test_a_pool_keeps_its_workers_between_calls
    Herd::Pool.open(processes: 2, job: ->(i) { [i, Process.pid] }) do |pool|
      first = pool.map(1..10, chunk_size: 1).map(&:last).uniq.sort
      second = pool.map(11..20, chunk_size: 1).map(&:last).uniq.sort
      assert_equal pool.pids.sort, (first | second).sort
      assert_equal 2, pool.size
    end
  end

  def test_a_pool_refuses_blocks_and_use_after_close
    pool = Herd::Pool.new(processes: 1, job: ->(i) { i })
    error = assert_raises(Herd::PoolError) { pool.map([1]) { |i| i } }
    assert_match(/forked before this block existed/, error.message)
    pids = pool.pids
    pool.close
    assert pool.closed?
    assert_raises(Herd::PoolError) { pool.map([1]) }
    pids.each { |pid| assert_raises(Errno::ECHILD) { Process.waitpid(pid, Process::WNOHANG) } }
  end

  def test_a_pool_needs_a_job
    error = assert_raises(ArgumentError) { Herd::Pool.new(processes: 1) }
    assert_match(/a pool needs its job: Herd::Pool.new\(job: /, error.message)
    assert_raises(ArgumentError) { Herd::Pool.new(processes: 1, job: :not_callable) }
    # A block is not the job: the error says to pass it as job:.
    error = assert_raises(ArgumentError) { Herd::Pool.new(processes: 1) { |item| item } }
    assert_match(/a pool needs its job: Herd::Pool.new\(job: /, error.message)
  end

  def test_max_items_per_worker_recycles_workers
    pids = Herd.map(1..9, processes: 1, max_items_per_worker: 3, chunk_size: 1) { Process.pid }
    assert_equal 3, pids.uniq.size
    assert_equal [3, 3, 3], pids.chunk_while { |a, b| a == b }.map(&:size)
  end

  def test_before_fork_runs_in_the_parent_before_each_fork_and_after_fork_in_each_worker
    before = []
    numbers = Herd.map(1..10, processes: 2, chunk_size: 1,
      before_fork: ->(number) { before << [number, Process.pid] },
      after_fork: ->(number) { Thread.current[:herd_test_worker] = number }) { Thread.current[:herd_test_worker] }
    assert_equal [[0, Process.pid], [1, Process.pid]], before
    assert_equal [0, 1], numbers.uniq.sort
  end

  # What a trap raising Interrupt does when it lands right after a fork
  # returns (Ruby runs trap handlers even where interrupts are deferred).
  def test_an_interrupt_right_after_a_worker_forks_leaves_no_child_behind
    pids = []
    raising = Herd.after_fork_parent do |pid|
      pids << pid
      raise Interrupt if pids.size == 2
    end
    assert_raises(Interrupt) { Herd.map([1, 2, 3, 4], processes: 2, prepare_heap: false) { |i| sleep 0.05 if i == 1 } }
    assert_equal 2, pids.size
    pids.each { |pid| assert_raises(Errno::ECHILD, "worker #{pid} left behind") { Process.waitpid(pid, Process::WNOHANG) } }
  ensure
    Herd.remove_fork_callback(raising)
  end

  def test_before_fork_runs_before_a_replacement_forks_too_and_may_take_no_argument
    calls = 0
    Herd.map(1..6, processes: 1, chunk_size: 1, max_items_per_worker: 2, before_fork: -> { calls += 1 }) { |i| i }
    assert_operator calls, :>=, 3, "one per worker forked: the first and its replacements"
  end

  HEAP_PREPARATIONS = <<~RUBY
    require "herd"
    calls = 0
    Herd::Heap.singleton_class.prepend(Module.new { define_method(:prepare) { |**o| calls += 1; super(**o) } })
    Herd.map(1..10, processes: 2) { |i| i }
    Herd.map(1..10, processes: 2, prepare_heap: false) { |i| i }
    Herd.map(1..10, processes: 2, prepare_heap: {seal_malloc: false}) { |i| i }
    print calls
  RUBY

  def test_the_heap_is_prepared_once_before_the_workers_fork
    out, err, status = ruby_run(HEAP_PREPARATIONS, env: {"HERD_PREPARE_HEAP_MIN_MB" => "0"})
    assert status.success?, err
    assert_equal "2", out
  end

  # A few MiB of heap: a call's preparation would cost more than the
  # workers could copy. A Hash of options still prepares.
  def test_a_small_process_skips_the_preparation_unless_given_options
    out, err, status = ruby_run(HEAP_PREPARATIONS, env: {"HERD_PREPARE_HEAP_MIN_MB" => "100000"})
    assert status.success?, err
    assert_equal "1", out
  end

  def test_threads_pool
    Herd::Pool.open(threads: 3, job: ->(i) { [i * 2, Thread.current.object_id] }) do |pool|
      results = pool.map(1..30, chunk_size: 1)
      assert_equal (1..30).map { |i| i * 2 }, results.map(&:first)
      assert_empty pool.pids
    end
  end

  def test_a_pool_made_in_a_thread_outlives_that_thread
    pool = Thread.new { Herd::Pool.new(processes: 1, job: ->(i) { i + 1 }) }.value
    assert_equal [2, 3], pool.map([1, 2])
  ensure
    pool&.close
  end

  def test_a_worker_exits_when_its_parent_goes_away_without_a_signal
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      $stdout.sync = true
      pool = Thread.new { Herd::Pool.new(processes: 1, job: ->(i) { i }) }.value # no PDEATHSIG from a thread
      print pool.pids.first
      exit!(0) # no at_exit, no close: only the socket's EOF tells the worker
    RUBY
    assert status.success?, err
    assert_gone([Integer(out)])
  end
end
