# frozen_string_literal: true

require "test_helper"

# `rake test:slow` (six rounds, each with its fixed settle time). Ctrl-C
# pressed repeatedly, or a supervisor's signals in quick succession:
# each INT may land anywhere (the loop, the terminate that follows the
# first, a pool closing, workers forking). None may leave a zombie or an
# open descriptor behind.
class PoolSignalBurstSlowTest < Herd::Test
  ROUNDS = 6

  # Runs Herd.each over an endless range, round after round; the test
  # signals it in bursts (the kernel merges some: at least one arrives).
  # An INT that lands in herd's code raises Interrupt there, as Ruby's own
  # handler would; one that lands in the script's code (its rescue, its
  # pause between rounds) is only counted: Ruby raises a signal's Interrupt
  # even where Thread.handle_interrupt defers other interrupts, and one in
  # the script's rescue clause would end the script, not test herd.
  # Each round then reports its children and descriptors.
  SCRIPT = <<~RUBY
    require "herd"
    $stdout.sync = true
    fds = -> { Dir.children("/proc/self/fd").size }
    Herd.map([1, 2], processes: 2) { |i| i } # herd's lazy loads (libc through Fiddle) open and close files
    start = fds.call
    interrupts = 0
    herd = File.expand_path("herd", $LOAD_PATH.first)
    trap("INT") do
      raise Interrupt if caller_locations.any? { |location| location.path.to_s.start_with?(herd) }

      interrupts += 1
    end
    #{ROUNDS}.times do |round|
      interrupts = 0
      said = false
      running = ->(*) { (said = true) && puts("running \#{round}") unless said }
      begin
        Herd.each(1..Float::INFINITY, processes: 2, start: running) { |i| sleep 0.001 }
      rescue Interrupt
        interrupts += 1
      end
      sleep 0.3 # the rest of the burst lands here, counted
      children = begin
        Process.waitpid(-1, Process::WNOHANG).inspect
      rescue Errno::ECHILD
        "none"
      end
      puts "round \#{round} interrupts=\#{interrupts} children=\#{children} fds=\#{fds.call - start}"
    end
  RUBY

  def self.test_timeout
    120
  end

  def test_bursts_of_interrupts_leave_no_zombie_and_no_descriptor
    reports = []
    IO.popen([RbConfig.ruby, "-I", File.join(ROOT, "lib"), "-e", SCRIPT], err: [:child, :out]) do |io|
      ROUNDS.times do |round|
        line = io.gets
        assert_equal "running #{round}", line&.chomp, "the script said: #{line}#{io.read_nonblock(10_000, exception: false)}"
        # Different rounds catch herd in different places: its loop,
        # workers being replaced, the terminate after the first INT.
        sleep(0.005 * round)
        5.times do
          Process.kill(:INT, io.pid)
          sleep 0.004
        end
        reports << io.gets&.chomp
      end
    ensure
      begin
        Process.kill(:KILL, io.pid)
      rescue Errno::ESRCH
        nil
      end
    end
    reports.each_with_index do |report, round|
      assert_match(/\Around #{round} interrupts=[1-5] children=none fds=0\z/, report, reports.join("\n"))
    end
  end
end
