# frozen_string_literal: true

require "test_helper"
require "json"

class CLIMemTest < Herd::Test
  # Starts a ruby that sets its title, forks `children` children that set
  # theirs, reports readiness on stdout and sleeps until its stdin closes.
  def with_process(children: 0)
    code = <<~RUBY
      Process.setproctitle("herd-cli-parent")
      kids = #{children}.times.map do |i|
        fork do
          Process.setproctitle("herd-cli-child-\#{i}")
          $stdout.puts("child"); $stdout.flush
          $stdin.read
          exit!(0)
        end
      end
      $stdout.puts("parent"); $stdout.flush
      $stdin.read
      kids.each { |pid| Process.wait(pid) }
    RUBY
    stdin, stdout, thread = Open3.popen2(PLAIN_RUBY, RbConfig.ruby, "-e", code)
    (children + 1).times { stdout.gets }
    yield thread.pid
  ensure
    stdin&.close
    stdout&.close
    thread&.value
  end

  def dead_pid
    pid = Process.spawn(PLAIN_RUBY, RbConfig.ruby, "-e", "exit")
    Process.wait(pid)
    pid
  end

  def assert_one_line_error(stderr, pattern)
    assert_equal 1, stderr.lines.size, stderr
    assert_match pattern, stderr
    refute_match(/\.rb:\d+/, stderr)
  end

  def test_one_process
    with_process do |pid|
      out, err, status = herd_cli("mem", pid.to_s)

      assert_predicate status, :success?, err
      assert_equal %w[PID RSS PSS USS SHARED PRIV DIRTY SHARED% TITLE], out.lines.first.split
      assert_match(/^\s*#{pid}\s.*herd-cli-parent$/, out)
      assert_match(/^TOTAL\s+-\s/, out)
    end
  end

  def test_tree
    with_process(children: 2) do |pid|
      out, err, status = herd_cli("mem", pid.to_s, "--tree")

      assert_predicate status, :success?, err
      assert_match(/herd-cli-parent$/, out)
      assert_match(/\\_ herd-cli-child-0$/, out)
      assert_match(/\\_ herd-cli-child-1$/, out)
      assert_match(/TOTAL.*3 processes/, out)
      assert_match(/Summed RSS would claim/, out)
      refute_match(/left out/, out, "herd mem is not in this tree: nothing to leave out")
    end
  end

  # A process that runs `herd mem --tree` on itself, as a shell spawned by an
  # application would: herd mem is then a descendant of the pid it measures.
  # The parent forks a child first (so there is a tree to measure), runs herd
  # mem as its own child, and prints what came out as JSON.
  def measure_from_inside(*args)
    code = <<~RUBY
      require "json"
      require "open3"
      root, *args = ARGV
      Process.setproctitle("herd-cli-parent")
      lifeline, release = IO.pipe
      ready_r, ready_w = IO.pipe
      kid = fork do
        release.close
        Process.setproctitle("herd-cli-child-0")
        ready_w.puts("ready")
        ready_w.close
        lifeline.read
        exit!(0)
      end
      ready_w.close
      ready_r.gets
      stdin, stdout, stderr, thread = Open3.popen3(RbConfig.ruby, "-I", File.join(root, "lib"), File.join(root, "exe", "herd"), "mem", Process.pid.to_s, "--tree", *args)
      stdin.close
      out = stdout.read
      err = stderr.read
      status = thread.value
      release.close
      Process.wait(kid)
      puts JSON.generate(parent: Process.pid, child: kid, herd_mem: thread.pid, out: out, err: err, status: status.exitstatus)
    RUBY
    out, err, status = ruby_run(code, ROOT, *args)
    assert_predicate status, :success?, err
    result = JSON.parse(out, symbolize_names: true)
    assert_equal 0, result[:status], result[:err]
    result
  end

  def test_tree_run_from_inside_leaves_herd_mem_out_and_says_so
    result = measure_from_inside
    out = result[:out]

    assert_match(/^\s*#{result[:parent]}\s.*herd-cli-parent$/, out)
    assert_match(/^\s*#{result[:child]}\s.*\\_ herd-cli-child-0$/, out)
    refute_match(/^\s*#{result[:herd_mem]}\s/, out, "herd mem's own row")
    refute_match(/herd mem #{result[:parent]}/, out.lines.grep(/^\s*\d+\s/).join, "no row is herd mem")
    assert_match(/TOTAL.*2 processes/, out)
    assert_equal "(herd mem, pid #{result[:herd_mem]}, left out)", out.lines.last.chomp
  end

  def test_tree_json_run_from_inside_leaves_herd_mem_out_of_rows_and_total
    result = measure_from_inside("--json")
    data = JSON.parse(result[:out])

    assert_equal [result[:parent], result[:child]], data["processes"].map { |process| process["pid"] }
    assert_equal [result[:herd_mem]], data["left_out"]
    assert_equal 2, data["total"]["processes"]
    assert_equal data["processes"].sum { |process| process["pss"] }, data["total"]["pss"]
    assert_equal data["processes"].sum { |process| process["uss"] }, data["total"]["uss"]
  end

  def test_json
    with_process(children: 1) do |pid|
      out, err, status = herd_cli("mem", pid.to_s, "-t", "-j")

      assert_predicate status, :success?, err
      data = JSON.parse(out)
      assert_equal pid, data["processes"].first["pid"]
      assert_equal %w[herd-cli-parent herd-cli-child-0], data["processes"].map { |process| process["title"] }
      assert_equal data["processes"].sum { |process| process["pss"] }, data["total"]["pss"]
      assert_kind_of Integer, data["total"]["uss"]
      assert_equal [], data["left_out"]
    end
  end

  def test_watch_reprints_count_times
    with_process do |pid|
      out, err, status = herd_cli("mem", pid.to_s, "--watch", "0.1", "--count", "2")

      assert_predicate status, :success?, err
      assert_equal 2, out.scan(/^herd mem #{pid}, every 0\.1s/).size
      assert_equal 2, out.scan(/^TOTAL/).size
    end
  end

  def test_watch_json_prints_json_lines
    with_process do |pid|
      out, err, status = herd_cli("mem", pid.to_s, "-j", "-w", "0.1", "--count", "2")

      assert_predicate status, :success?, err
      assert_equal 2, out.lines.size
      out.lines.each { |line| assert_equal pid, JSON.parse(line)["processes"].first["pid"] }
    end
  end

  def test_help
    out, _, status = herd_cli("mem", "--help")

    assert_predicate status, :success?
    assert_match(/\AUsage: herd mem PID/, out)
    assert_match(/--watch SECONDS/, out)
  end

  def test_non_numeric_pid_is_a_usage_error
    out, err, status = herd_cli("mem", "abc")

    assert_equal 2, status.exitstatus
    assert_empty out
    assert_one_line_error(err, /PID must be a positive integer, got "abc"/)
  end

  def test_missing_pid_is_a_usage_error
    _, err, status = herd_cli("mem")

    assert_equal 2, status.exitstatus
    assert_one_line_error(err, /missing PID/)
  end

  def test_bad_options_are_usage_errors
    [["--watch", "0"], ["--watch", "-1"], ["--watch", "soon"], ["--bogus"], ["--count", "2"]].each do |args|
      _, err, status = herd_cli("mem", Process.pid.to_s, *args)

      assert_equal 2, status.exitstatus, args.inspect
      assert_one_line_error(err, /\Aherd: mem: /)
    end
  end

  def test_no_such_process
    pid = dead_pid
    out, err, status = herd_cli("mem", pid.to_s)

    assert_equal 1, status.exitstatus
    assert_empty out
    assert_one_line_error(err, /\Aherd: no process with pid #{pid}$/)
  end

  def test_debug_shows_a_backtrace
    _, err, status = herd_cli("mem", dead_pid.to_s, "--debug")

    assert_equal 1, status.exitstatus
    assert_operator err.lines.size, :>, 1
    assert_match(%r{lib/herd/memory/smaps\.rb:\d+}, err)
  end
end
