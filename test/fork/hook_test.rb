# frozen_string_literal: true

require "test_helper"

class ForkHookTest < Herd::Test
  FORKS = {
    "Kernel#fork with a block" => -> { pid = fork { exit!(0) } and Process.wait(pid) },
    "Kernel#fork without a block" => -> { (pid = fork) ? Process.wait(pid) : exit!(0) },
    "Kernel.fork" => -> { Process.wait(Kernel.fork { exit!(0) }) },
    "Process.fork with a block" => -> { Process.wait(Process.fork { exit!(0) }) },
    "Process.fork without a block" => -> { (pid = Process.fork) ? Process.wait(pid) : exit!(0) },
    'IO.popen("-")' => -> { (io = IO.popen("-")) ? io.close : exit!(0) }
  }.freeze

  OPT_OUTS = {
    "fork(prepare_heap: false) { }" => -> { Process.wait(fork(prepare_heap: false) { exit!(0) }) },
    "fork(prepare_heap: false)" => -> { (pid = fork(prepare_heap: false)) ? Process.wait(pid) : exit!(0) },
    "Process.fork(prepare_heap: false)" => -> { (pid = Process.fork(prepare_heap: false)) ? Process.wait(pid) : exit!(0) },
    "Process.fork(prepare_heap: false) { }" => -> { Process.wait(Process.fork(prepare_heap: false) { exit!(0) }) },
    "Kernel.fork(prepare_heap: false) { }" => -> { Process.wait(Kernel.fork(prepare_heap: false) { exit!(0) }) }
  }.freeze

  # nakayoshi_fork's opt-outs (shared/seeds), so code written for that gem
  # opts out the same way.
  NAKAYOSHI_OPT_OUTS = {
    "fork(nakayoshi: false) { }" => -> { Process.wait(fork(nakayoshi: false) { exit!(0) }) },
    "fork(cow_friendly: false)" => -> { (pid = fork(cow_friendly: false)) ? Process.wait(pid) : exit!(0) },
    "Process.fork(nakayoshi: false)" => -> { (pid = Process.fork(nakayoshi: false)) ? Process.wait(pid) : exit!(0) },
    "Process.fork(cow_friendly: false) { }" => -> { Process.wait(Process.fork(cow_friendly: false) { exit!(0) }) },
    "Kernel.fork(cow_friendly: false) { }" => -> { Process.wait(Kernel.fork(cow_friendly: false) { exit!(0) }) }
  }.freeze

  def setup
    Herd::ForkHook.install
    Herd::ForkHook.reset!
  end

  def teardown
    Herd::ForkHook.reset!
  end

  FORKS.each do |name, forker|
    define_method("test_#{name}_prepares_the_heap_and_runs_callbacks") do
      Herd::ForkHook.prepare_heap = true
      parent_calls = []
      Herd.before_fork { parent_calls << :before }
      Herd.after_fork_parent { |pid| parent_calls << [:after, pid.class] }
      forker.call
      assert_equal [:before, [:after, Integer]], parent_calls
      assert_instance_of Herd::Heap::Report, Herd::ForkHook.last_report
    end
  end

  OPT_OUTS.merge(NAKAYOSHI_OPT_OUTS).each do |name, forker|
    define_method("test_#{name}_skips_heap_preparation_but_runs_callbacks") do
      Herd::ForkHook.prepare_heap = true
      calls = 0
      Herd.before_fork { calls += 1 }
      out, err = capture_io { forker.call }
      assert_equal ["", ""], [out, err], "an opt-out is silent"
      assert_equal 1, calls
      assert_nil Herd::ForkHook.last_report
    end
  end

  def test_fork_prepare_heap_true_prepares_when_the_switch_is_off
    Herd::ForkHook.prepare_heap = false
    Process.wait(fork(prepare_heap: true) { exit!(0) })
    assert_instance_of Herd::Heap::Report, Herd::ForkHook.last_report
  end

  def test_the_innermost_override_wins
    Herd::ForkHook.prepare_heap = false
    Herd::ForkHook.without_heap_preparation { Process.wait(fork(prepare_heap: true) { exit!(0) }) }
    assert_instance_of Herd::Heap::Report, Herd::ForkHook.last_report
  end

  def test_prepare_heap_refuses_what_heap_prepare_does_not_take
    error = assert_raises(ArgumentError) { Herd::ForkHook.prepare_heap = {compactt: true} }
    assert_match(/unknown options compactt; known: compact/, error.message)
    assert_raises(ArgumentError) { Herd::ForkHook.prepare_heap = "yes" }
    error = assert_raises(ArgumentError) { Herd::ForkHook.prepare_heap = {compact: :always} }
    assert_equal "prepare_heap: compact: must be true, false or :auto, got :always", error.message
  end

  def test_global_switch_off_skips_heap_preparation
    Herd::ForkHook.prepare_heap = false
    FORKS.each_value(&:call)
    assert_nil Herd::ForkHook.last_report
  end

  def test_the_child_runs_after_fork_callbacks_in_order
    Herd.after_fork { Thread.current[:herd_test_order] = [:first] }
    Herd.after_fork { Thread.current[:herd_test_order] << :second }
    assert_equal [:first, :second], in_child { Thread.current[:herd_test_order] }
  end

  def test_opt_out_does_not_leak_into_forks_made_by_the_child
    Herd::ForkHook.prepare_heap = true
    nested_prepared = in_child(fork_method: ->(&b) { fork(prepare_heap: false, &b) }) do
      Process.wait(fork { exit!(0) })
      !Herd::ForkHook.last_report.nil?
    end
    assert nested_prepared, "a plain fork inside an opted-out child must prepare the heap"
  end

  def test_return_values_are_unchanged
    reader, writer = IO.pipe
    pid = fork
    if pid.nil?
      writer.write("nil-in-child")
      exit!(0)
    end
    writer.close
    assert_kind_of Integer, pid
    assert_equal "nil-in-child", reader.read
    Process.wait(pid)
  ensure
    reader&.close
  end

  def test_a_raising_before_fork_callback_aborts_the_fork_with_a_clear_error
    Herd.before_fork { raise ArgumentError, "database not ready" }
    error = assert_raises(Herd::ForkCallbackError) { fork { exit!(0) } }
    assert_match(/before_fork callback at .*hook_test\.rb:\d+ raised ArgumentError: database not ready/, error.message)
    assert_match(/fork was not performed/, error.message)
    assert_raises(Errno::ECHILD) { Process.wait }
  end

  def test_a_raising_after_fork_callback_is_reported_and_the_rest_still_run
    code = <<~RUBY
      require "herd"
      $stdout.sync = true
      Herd.after_fork { raise "reconnect failed" }
      Herd.after_fork { puts "child carried on" }
      Herd.after_fork_parent { |pid| raise "parent hook failed" }
      pid = fork { exit!(0) }
      Process.wait(pid)
      puts "parent got \#{pid.class}"
    RUBY
    out, err, status = ruby_run(code)
    assert status.success?, err
    assert_includes out, "child carried on"
    assert_includes out, "parent got Integer"
    assert_match(/herd: after_fork callback at -e:3 raised RuntimeError: reconnect failed/, err)
    assert_match(/herd: after_fork_parent callback at -e:5 raised RuntimeError: parent hook failed/, err)
  end

  def test_at_exit_semantics_are_unchanged
    script = <<~RUBY
      $stdout.sync = true
      at_exit { puts "at_exit in \#{Process.pid == $parent ? "parent" : "child"}" }
      $parent = Process.pid
      Process.wait(fork { puts "child block" })
      Process.wait(fork { exit!(0) })
    RUBY
    plain, = ruby_run(script)
    hooked, = ruby_run("require 'herd/fork'\n" + script)
    assert_equal plain, hooked
    assert_equal ["child block", "at_exit in child", "at_exit in parent"], hooked.lines(chomp: true)
  end

  def test_removed_callbacks_no_longer_run
    calls = 0
    block = Herd.before_fork { calls += 1 }
    assert Herd.remove_fork_callback(block)
    refute Herd.remove_fork_callback(block)
    Process.wait(fork { exit!(0) })
    assert_equal 0, calls
  end

  def test_require_herd_fork_honours_the_environment_switch
    out, err, = ruby_run('require "herd/fork"; print Herd::ForkHook.prepare_heap', env: {"HERD_PREPARE_HEAP" => "0"})
    assert_equal "false", out, err
    out, = ruby_run('require "herd/fork"; print Herd::ForkHook.prepare_heap')
    assert_equal "true", out
  end

  def test_compaction_runs_before_the_first_fork_only
    skip "GC.compact not available" unless Herd::Heap.compaction_supported?
    Herd::ForkHook.prepare_heap = true
    Herd::ForkHook.prepare_heap = {compact: true}
    Process.wait(fork { exit!(0) })
    assert Herd::ForkHook.last_report.compacted
    Process.wait(fork { exit!(0) })
    refute Herd::ForkHook.last_report.compacted
  end

  def test_a_threads_pid_box_gets_each_childs_pid
    box = Thread.current[Herd::ForkHook::PID_BOX] = []
    pid = fork { exit!(0) }
    assert_equal [pid], box
  ensure
    Thread.current[Herd::ForkHook::PID_BOX] = nil
    Process.wait(pid) if pid
  end
end
