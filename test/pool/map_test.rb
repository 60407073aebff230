# frozen_string_literal: true

require "test_helper"
require "stringio"

class PoolMapTest < Herd::Test
  MODES = {"processes" => {processes: 2}, "threads" => {threads: 2}, "inline" => {processes: 0}}.freeze

  MODES.each do |mode, options|
    define_method("test_map_keeps_input_order_with_#{mode}") do
      assert_equal (1..50).map { |i| i * i }, Herd.map(1..50, **options) { |i| i * i }
    end

    define_method("test_enumerable_methods_with_#{mode}") do
      assert_equal [2, 4, 6], Herd.filter_map(1..6, **options) { |i| i.even? && i * 1 }
      assert_equal [nil, false, 2], Herd.map([nil, false, 1], **options) { |x| x && 2 }
      assert_equal [1, 1, 2, 2, 3], Herd.flat_map([1, 2, 3], **options) { |i| (i == 3) ? 3 : [i, i] }
      assert Herd.any?(1..100, **options) { |i| i == 42 }
      refute Herd.any?(1..10, **options) { |i| i > 10 }
      assert Herd.all?(1..10, **options) { |i| i <= 10 }
      refute Herd.all?(1..10, **options) { |i| i < 5 }
      assert_equal %w[a0 b1 c2], Herd.map_with_index(%w[a b c], **options) { |x, i| "#{x}#{i}" }
    end

    define_method("test_errors_reraise_with_class_and_message_with_#{mode}") do
      error = assert_raises(KeyError) { Herd.map(1..20, **options) { |i| (i == 13) ? raise(KeyError, "no #{i}") : i } }
      assert_equal "no 13", error.message
      assert_match(/map_test\.rb/, error.backtrace.first)
    end

    define_method("test_break_stops_early_with_its_value_with_#{mode}") do
      assert_equal :found, Herd.map(1..1000, **options) { |i| (i == 10) ? raise(Herd::Break, :found) : i }
      assert_nil Herd.each(1..1000, **options) { |i| raise Herd::Break if i == 10 }
    end

    define_method("test_worker_number_is_set_inside_the_block_with_#{mode}") do
      numbers = Herd.map(1..20, chunk_size: 1, **options) { Herd.worker_number }
      assert numbers.all? { |n| n.is_a?(Integer) && n >= 0 && n < 2 }, numbers.inspect
    end
  end

  def test_each_returns_the_source_and_each_with_index_passes_positions
    source = %w[x y z]
    assert_same source, Herd.each(source, processes: 2) { |item| item }
    seen = []
    Herd.each_with_index(source, processes: 2, finish: ->(item, index, _) { seen << [item, index] }) { |x, i| [x, i] }
    assert_equal [["x", 0], ["y", 1], ["z", 2]], seen.sort_by(&:last)
  end

  def test_sources_are_streamed_not_forced_to_arrays
    endless = Enumerator.new { |y| n = 0; loop { y << (n += 1) } } # standard:disable Style/Semicolon
    assert Herd.any?(endless, processes: 2) { |i| i == 500 }
    assert Herd.any?((1..).lazy.map { |i| i * 3 }, processes: 2) { |i| i == 300 }
    assert_equal [2, 4], Herd.map({a: 1, b: 2}, processes: 2) { |_k, v| v * 2 }
    assert_equal ["A", "B"], Herd.map("a".."b", processes: 2, &:upcase)
  end

  def test_a_queue_source_runs_until_closed
    queue = Queue.new
    producer = Thread.new do
      5.times { |i| queue << i }
      queue.close
    end
    assert_equal [0, 10, 20, 30, 40], Herd.map(queue, processes: 2) { |i| i * 10 }
  ensure
    producer&.join
  end

  def test_a_producer_lambda_runs_until_herd_stop
    items = [3, 2, 1]
    assert_equal [6, 4, 2], Herd.map(-> { items.shift || Herd::Stop }, processes: 2) { |i| i * 2 }
  end

  def test_start_and_finish_run_in_the_parent
    started = []
    finished = []
    Herd.map([10, 20], processes: 2, start: ->(item, index) { started << [item, index, Process.pid] },
      finish: ->(item, index, result) { finished << [item, index, result, Process.pid] }) { |i| i + 1 }
    assert_equal [[10, 0, Process.pid], [20, 1, Process.pid]], started.sort
    assert_equal [[10, 0, 11, Process.pid], [20, 1, 21, Process.pid]], finished.sort
  end

  # After an error, results other workers sent before they stopped still
  # reach finish:, once each, and only items that completed; a reusable
  # pool's next call hears of its own items alone.
  def test_finish_sees_each_completed_item_once_after_an_error
    Dir.mktmpdir do |dir|
      log = File.join(dir, "completed")
      job = lambda do |(call, i)|
        raise "boom #{i}" if i == 10

        sleep 0.002
        File.write(log, "#{call} #{i}\n", mode: "a")
        i * 2
      end
      Herd::Pool.open(processes: 2, job: job) do |pool|
        2.times do |call|
          finished = []
          error = assert_raises(RuntimeError) do
            pool.map((0...40).map { |i| [call, i] }, finish: ->((c, i), index, result) { finished << [c, i, index, result] })
          end
          assert_equal "boom 10", error.message
          completed = File.readlines(log, chomp: true).filter_map { |line| line.split.map(&:to_i) if line.start_with?("#{call} ") }
          assert_equal finished.uniq, finished
          finished.each do |c, i, index, result|
            assert_equal [call, i, i * 2], [c, index, result]
            assert_includes completed, [call, i]
          end
        end
      end
    end
  end

  def test_worker_processes_are_forked_and_reaped
    pids = Herd.map(1..10, processes: 2, chunk_size: 1) { Process.pid }.uniq
    refute_includes pids, Process.pid
    assert_operator pids.size, :<=, 2
    pids.each { |pid| assert_raises(Errno::ECHILD, Errno::ESRCH) { Process.waitpid(pid, Process::WNOHANG) } }
  end

  def test_no_more_workers_than_items
    assert_equal 1, Herd.map([1], processes: 8) { Process.pid }.uniq.size
  end

  def test_items_are_read_from_the_workers_copy_of_an_array
    big = Array.new(1000) { |i| "item #{i}" }
    lengths = Herd.map(big, processes: 2) { |s| s.length }
    assert_equal big.map(&:length), lengths
  end

  def test_progress_bar_draws_when_forced
    output = StringIO.new
    Herd.map(1..20, processes: 2, progress: {title: "Squares", output: output, force: true}) { |i| i * i }
    assert_match(/Squares: \|=+\|/, output.string)
  end

  def test_progress_is_silent_when_not_a_tty
    output = StringIO.new
    Herd.map(1..5, processes: 2, progress: {output: output}) { |i| i }
    assert_empty output.string
  end

  def test_bad_options_fail_before_any_fork
    assert_raises(ArgumentError) { Herd.map(1..3, bogus: true) { |i| i } }
    assert_raises(ArgumentError) { Herd.map(1..3, processes: -1) { |i| i } }
    assert_raises(ArgumentError) { Herd.map(1..3, processes: 1, threads: 1) { |i| i } }
    assert_raises(ArgumentError) { Herd.map(1..3, timeout: 0) { |i| i } }
    assert_raises(ArgumentError) { Herd.map(1..3, on_timeout: :explode) { |i| i } }
    assert_raises(ArgumentError) { Herd.map(1..3, finish: 42) { |i| i } }
    assert_raises(ArgumentError) { Herd.map(Object.new) { |i| i } }
    error = assert_raises(ArgumentError) { Herd.map(1..3) }
    assert_match(/needs a block/, error.message)
  end

  def test_herd_processes_environment_variable_sets_the_default
    out, err, status = ruby_run('require "herd"; print Herd.map(1..20, chunk_size: 1) { Process.pid }.uniq.size',
      env: {"HERD_PROCESSES" => "1"})
    assert status.success?, err
    assert_equal "1", out
  end
end
