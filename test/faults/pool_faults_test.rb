# frozen_string_literal: true

require "test_helper"
require "json"
require "tmpdir"

# Faults in Herd.map, each run in a process of its own
# (test/support/fault_pool.rb): a worker SIGKILLed mid-run, a job raising,
# and bursts of 5 SIGINTs within 20 ms. Afterwards the process has no child
# left, not even a zombie, and the descriptors it had before.
class FaultPoolTest < Herd::Test
  SCRIPT = File.expand_path("../support/fault_pool.rb", __dir__)
  BURSTS = 8

  def self.test_timeout
    120
  end

  def teardown
    @pids&.each do |pid|
      Process.kill(:KILL, -pid) # its group: it and its workers
      Process.wait(pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    end
  end

  def test_a_worker_sigkilled_mid_run_raises_worker_died_naming_the_item
    result = scenario("killed")
    explained = (result["raised"] == "Herd::WorkerDied" && result["pid"] == result["killed"]) ? 1 : 0
    report("pool worker SIGKILL", items: 20, ok: result["done"], failed: 1, explained: explained)
    assert_equal "Herd::WorkerDied", result["raised"], result.inspect
    assert_equal 6, result["index"], "the item the killed worker was on (item 7, index 6)"
    assert_equal result["killed"], result["pid"]
    assert_equal Signal.list["KILL"], result["termsig"]
    assert_match(/was killed by SIGKILL while working on item 6 \(7\)/, result["message"])
    assert_clean(result)
  end

  def test_a_job_raising_reaches_the_caller_and_leaves_nothing
    result = scenario("raising")
    report("pool job raising", items: 30, ok: result["done"], failed: 1, explained: (result["message"] == "bad item 13") ? 1 : 0)
    assert_equal "ArgumentError", result["raised"], result.inspect
    assert_equal "bad item 13", result["message"]
    assert_clean(result)
  end

  # The first SIGINT interrupts the run; the next ones land while Herd.map
  # stops and reaps its workers. Gaps vary from run to run.
  def test_bursts_of_five_sigints_within_20ms_leave_no_zombie_and_no_descriptor
    seed = Integer(ENV.fetch("HERD_FAULT_SEED") { Random.new_seed % 1_000_000 })
    random = Random.new(seed)
    problems = []
    interrupted = 0
    BURSTS.times do |burst|
      gaps = Array.new(4) { (burst.zero? ? 0 : random.rand(0.005)).round(4) }
      result = scenario("interrupts") do |pid, stdout|
        2.times { stdout.gets } # both workers are on an item
        sleep random.rand(0.01)
        Process.kill(:INT, pid)
        gaps.each do |gap|
          sleep gap
          Process.kill(:INT, pid)
        end
      end
      interrupted += 1 if result["raised"] == "Interrupt"
      problems << "burst #{burst} (gaps #{gaps}): Herd.map ended with #{result["raised"].inspect}" unless result["raised"] == "Interrupt"
      problems.concat(leftovers(result).map { |problem| "burst #{burst} (gaps #{gaps}): #{problem}" })
    end
    bad = problems.map { |problem| problem[/\Aburst \d+/] }.uniq.size
    report("pool SIGINT bursts", items: BURSTS, ok: BURSTS - bad, failed: bad, explained: 0,
      sigints: BURSTS * 5, interrupted: interrupted)
    assert problems.empty?, "after SIGINT bursts in Herd.map (HERD_FAULT_SEED=#{seed} replays them):\n#{problems.join("\n")}"
  end

  private

  # Runs a scenario; with a block, yields its pid and stdout once it runs,
  # then tells it (a line on stdin) that the block is done.
  # @return [Hash] its RESULT
  def scenario(name)
    Dir.mktmpdir("herd-faults-pool") do |dir|
      out_reader, out_writer = IO.pipe
      in_reader, in_writer = IO.pipe
      pid = Process.spawn(RbConfig.ruby, "-I", File.join(ROOT, "lib"), SCRIPT, name, dir,
        out: out_writer, in: in_reader, pgroup: true)
      (@pids ||= []) << pid
      out_writer.close
      in_reader.close
      yield pid, out_reader if block_given?
      in_writer.puts "done"
      line = read_result(out_reader)
      _, status = Process.wait2(pid)
      @pids.delete(pid)
      assert status.success?, "the #{name} scenario failed: #{status.inspect}"
      JSON.parse(line.delete_prefix("RESULT "))
    ensure
      [out_reader, in_writer].each { |io| io&.close }
    end
  end

  def read_result(stdout)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 30
    buffer = +""
    until (line = buffer.lines.find { |candidate| candidate.start_with?("RESULT ") && candidate.end_with?("\n") })
      remaining = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      flunk "no RESULT line in 30 s; output: #{buffer}" if remaining <= 0 || !stdout.wait_readable(remaining)
      chunk = stdout.read_nonblock(4096, exception: false)
      flunk "no RESULT line before the output ended: #{buffer}" if chunk.nil?
      buffer << chunk if chunk.is_a?(String)
    end
    line
  end

  # @return [Array<String>] children left (alive or zombie), descriptors leaked or lost
  def leftovers(result)
    problems = result["children"].map { |child| "child pid #{child["pid"]} left (state #{child["state"]})" }
    before = result["fds_before"]
    after = result["fds_after"]
    (after.keys - before.keys).each { |fd| problems << "descriptor #{fd} (#{after[fd]}) leaked" }
    (before.keys - after.keys).each { |fd| problems << "descriptor #{fd} (#{before[fd]}) closed" }
    problems
  end

  def assert_clean(result)
    problems = leftovers(result)
    assert problems.empty?, problems.join("\n")
  end

  def report(name, items:, ok:, failed:, explained:, **more)
    extra = more.map { |key, value| " #{key}=#{value}" }.join
    $stdout.puts "\n[faults] #{name}: sent=#{items} ok=#{ok} failed=#{failed} explained=#{explained}#{extra}"
  end
end
