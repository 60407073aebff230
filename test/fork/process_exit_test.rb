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

  # What the finish is for: a forked child's exit writes to the pages it
  # shares with its parent when Ruby walks the heap. Counted in minor page
  # faults (each a page copied or touched), read from /proc: the child's own
  # count before it exits, the parent's count of its waited children after.
  FAULTS = <<~RUBY
    require "herd/process_exit"
    require "zlib"
    def faults(field) = File.read("/proc/self/stat").split(") ").last.split[field].to_i
    $heap = Array.new(200_000) { |i| i.even? ? "x" * 60 + i.to_s : {a: i, b: [i]} }
    $data = Array.new(2_000) { Zlib::Deflate.new }
    GC.start
    reader, writer = IO.pipe
    children_before = faults(8)
    pid = fork do
      reader.close
      20_000.times { |i| "y" * 100 + i.to_s }
      writer.puts faults(7)
      writer.close
      Herd::ProcessExit.graceful(0)
    end
    writer.close
    before_exit = Integer(reader.read)
    Process.wait(pid)
    puts faults(8) - children_before - before_exit
  RUBY

  def test_the_fast_finish_spares_the_pages_a_forked_child_shares
    fast, err, = ruby_run(FAULTS)
    whole, err2, = ruby_run(FAULTS, env: {"HERD_FAST_EXIT" => "0"})
    fast = Integer(fast, exception: false) or flunk(err)
    whole = Integer(whole, exception: false) or flunk(err2)
    puts "\n  page faults while a forked child exits: #{whole} with Ruby's exit, #{fast} with the fast finish"
    assert_operator fast * 4, :<, whole, "the fast finish skips Ruby's walk over the heap"
  end
end
