# frozen_string_literal: true

require "test_helper"

# The names docs/API.md retired: each still works until 1.0, and says once
# per process, in one line, what to write instead.
class DeprecationTest < Herd::Test
  WARNING = /\Aherd: (.+) is deprecated; use (.+) \(the old name works until herd 1\.0\)\z/

  # Every old name used twice in one process: it works both times, and
  # warns the first time only.
  def test_old_names_warn_once_and_keep_working
    out, err, status = ruby_run(<<~RUBY, env: {"HERD_COW_FRIENDLY" => "0", "HERD_PREPARE_HEAP" => nil})
      require "herd/fork"
      $stdout.sync = true
      results = []
      results << Herd::ForkHook.prepare_heap                       # HERD_COW_FRIENDLY=0 read
      2.times do
        results << Herd::ForkHook.cow_friendly
        Herd::ForkHook.cow_friendly = true
        Herd::ForkHook.heap_options = {max_gc_runs: 2}
        results << Herd::ForkHook.heap_options
        Herd::ForkHook.install(cow_friendly: true)
        Herd.after_fork_child { $after_fork = true }
        Process.wait(fork(nakayoshi: false) { exit!($after_fork ? 0 : 1) })
        results << $?.success?                                   # the callback ran
        Process.wait(fork(cow_friendly: false) { exit!(0) })
        results << Herd::ForkHook.last_report.nil?               # both opted out
        results << Herd::Timeout.name
        pool = Herd::Pool.new(processes: 1) { |i| i + 1 }
        results << pool.map([1, 2])
        pool.close
      end
      p results
    RUBY
    assert status.success?, err
    assert_equal [false,
      false, {max_gc_runs: 2}, true, true, "Herd::TimeoutError", [2, 3],
      true, {max_gc_runs: 2}, true, true, "Herd::TimeoutError", [2, 3]], eval(out) # standard:disable Security/Eval
    lines = err.lines(chomp: true)
    assert(lines.all? { |line| line.match?(WARNING) }, err)
    warned = lines.map { |line| line[WARNING, 1] }
    assert_equal ["HERD_COW_FRIENDLY", "Herd::ForkHook.cow_friendly", "Herd::ForkHook.cow_friendly=",
      "Herd::ForkHook.heap_options=", "Herd::ForkHook.heap_options", "Herd::ForkHook.install(cow_friendly:)",
      "Herd.after_fork_child", "fork(nakayoshi:)", "fork(cow_friendly:)", "Herd::Timeout",
      "Herd::Pool.new { |item| ... }"], warned
  end

  def test_a_warning_names_the_new_spelling
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      Herd.after_fork_child {}
      print Herd::Deprecation.warn("x", "y")
    RUBY
    assert status.success?, err
    assert_equal "true", out
    assert_equal ["herd: Herd.after_fork_child is deprecated; use Herd.after_fork (the old name works until herd 1.0)",
      "herd: x is deprecated; use y (the old name works until herd 1.0)"], err.lines(chomp: true)
  end
end
