# frozen_string_literal: true

require "test_helper"

# `rake test:slow`: what ProcessExit's fast finish saves, measured on a
# large heap (hundreds of MiB of zlib streams, two interpreters).
class ProcessExitSlowTest < Herd::Test
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
