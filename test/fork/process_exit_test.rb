# frozen_string_literal: true

require "test_helper"
require "tmpdir"

# How a graceful end finishes: the app's at_exit hooks and finalizers, every
# buffered IO flushed, its Tempfiles unlinked, its status kept, and then
# exit! instead of the heap walk that copies a forked child's pages.
class ProcessExitTest < Herd::Test
  WITNESS = File.expand_path("../support/exit_witness.rb", __dir__)

  # Registers hooks before and after herd arms its finish, a finalizer, a
  # buffered file left open, a Tempfile left open and the witness.
  APP = <<~RUBY
    require "herd/process_exit"
    require "tempfile"
    require #{WITNESS.dump}
    dir = ARGV[0]
    at_exit { $stdout.puts "hook registered first" }
    file = File.open(File.join(dir, "buffered.txt"), "w")
    file.sync = false
    file.write "a line still in Ruby's buffer\\n"
    $tempfile = Tempfile.new("herd-exit")
    File.write(File.join(dir, "tempfile_path"), $tempfile.path)
    $anchor = Object.new
    ObjectSpace.define_finalizer($anchor, proc { $stdout.puts "app finalizer"; $stdout.flush })
    Herd::ExitWitness.arm(File.join(dir, "witness"))
    Herd::ProcessExit.arm_fast_finish(3) if ARGV[1] == "arm-early"
    at_exit { $stdout.puts "hook registered last" }
    Herd::ProcessExit.graceful(3)
  RUBY

  def run_app(env: {}, mode: "")
    Dir.mktmpdir("herd-exit") do |dir|
      out, err, status = ruby_run(APP, dir, mode, env: env)
      yield out, err, status, dir
    end
  end

  def assert_nothing_lost(out, err, status, dir)
    assert_equal 3, status.exitstatus, err
    assert_includes out, "hook registered first"
    assert_includes out, "hook registered last"
    assert_includes out, "app finalizer", "the app's finalizers run before the finish"
    assert_equal "a line still in Ruby's buffer\n", File.read(File.join(dir, "buffered.txt"))
    refute File.exist?(File.read(File.join(dir, "tempfile_path"))), "the open Tempfile is unlinked"
  end

  def test_a_graceful_end_runs_every_hook_and_finalizer_flushes_and_unlinks_then_skips_the_heap_walk
    run_app do |out, err, status, dir|
      assert_nothing_lost(out, err, status, dir)
      assert File.exist?(File.join(dir, "witness")), "ended with exit!, before Ruby freed the heap's C objects"
    end
  end

  def test_armed_before_the_app_registers_more_hooks_the_finish_still_waits_for_all_of_them
    run_app(mode: "arm-early") do |out, err, status, dir|
      assert_nothing_lost(out, err, status, dir)
      assert File.exist?(File.join(dir, "witness"))
    end
  end

  def test_HERD_FAST_EXIT_0_leaves_Ruby_its_whole_exit
    run_app(env: {"HERD_FAST_EXIT" => "0"}) do |out, err, status, dir|
      assert_nothing_lost(out, err, status, dir)
      refute File.exist?(File.join(dir, "witness")), "Ruby's exit freed the witness (unlinking its file)"
    end
  end
end
