# frozen_string_literal: true

require "test_helper"
require "support/server_harness"

# Logs as a service manager keeps them: stdout and stderr in files, and
# logrotate's USR1.
class ServerLogFilesSlowTest < Herd::Test
  # Buffered stdout, as a Ruby app gets when stdout is a file (herd makes it
  # synchronous; an app may turn that off): one line per request, and one
  # from each process's at_exit hook.
  LINES_APP = <<~RUBY
    $stdout.sync = false
    at_exit { $stdout.puts "at_exit \#{Process.pid}" }
    run ->(env) {
      $stdout.puts "request \#{env["PATH_INFO"]} by \#{Process.pid}"
      [200, {"content-type" => "text/plain"}, ["\#{Process.pid}"]]
    }
  RUBY
  # Where the spawn (a shell's `>> file`) or herd's stdout_path/stderr_path puts each stream.
  FILES = {out: "app.log", err: "herd.log"}.freeze

  def self.test_timeout
    90
  end

  def teardown
    @server&.cleanup
  end

  def test_no_line_is_lost_when_workers_retire_stop_or_leave_and_at_exit_hooks_run
    @server = Herd::ServerHarness.new(app: LINES_APP, config: "workers 2\nshutdown_timeout 10", logs: FILES)
    @server.wait_for(/ready: 2 workers/)
    sent = []
    served_by = Hash.new(0)
    request = lambda do |tag|
      sent << "/#{tag}"
      served_by[Integer(@server.body("/#{tag}"))] += 1
    end
    10.times { |n| request.call("before-ttou-#{n}") }
    @server.signal("TTOU") # worker 1 finishes and exits
    @server.wait_for(/worker 1 \(gen 0\), pid \d+ exited with status 0/)
    10.times { |n| request.call("before-refork-#{n}") }
    @server.signal("TTIN")
    @server.wait_for(/worker 1 \(gen 0\), pid \d+ ready/)
    @server.signal("USR2") # gen 0 retires: its mold and its workers exit
    @server.wait_for(/mold \(gen 1\), pid \d+ ready/)
    @server.wait_for(/mold \(gen 0\), pid \d+ exited with status 0/)
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    @server.wait_for(/worker 1 \(gen 1\), pid \d+ ready/)
    10.times { |n| request.call("after-refork-#{n}") }
    @server.signal("QUIT")
    assert_equal 0, @server.wait.exitstatus

    log = File.read(@server.path("app.log"))
    missing = sent.reject { |target| log.include?("request #{target} by ") }
    puts "\n  stdout to a file: #{sent.size} requests sent, #{sent.size - missing.size} lines found, " \
      "#{served_by.size} worker pids"
    assert_empty missing, "lines lost:\n#{log}"
    gone = File.read(@server.path("herd.log")).scan(/(?:worker \d+|mold) \(gen \d+\), pid (\d+) exited with status 0/).flatten
    without_hook = gone.reject { |pid| log.include?("at_exit #{pid}") }
    assert_operator gone.size, :>=, 5, "molds and workers that exited gracefully"
    assert_empty without_hook, "every gracefully exiting worker and mold runs the app's at_exit hooks"
  end

  def test_TERM_to_a_worker_loses_no_line_and_runs_no_at_exit_hook
    @server = Herd::ServerHarness.new(app: LINES_APP, config: "workers 1", logs: FILES)
    @server.wait_for(/ready: 1 workers/)
    worker = Integer(@server.body("/one"))
    @server.body("/two")
    @server.signal("TERM", worker)
    @server.wait_for(/worker 0 \(gen 0\), pid #{worker} exited with status 0/)
    log = File.read(@server.path("app.log"))
    assert_includes log, "request /one by #{worker}"
    assert_includes log, "request /two by #{worker}"
    refute_includes log, "at_exit #{worker}", "TERM is an immediate stop"
  end

  def test_logrotate_renames_the_files_and_USR1_makes_every_process_write_to_new_ones
    @server = Herd::ServerHarness.new(app: LINES_APP, logs: FILES, redirect: false,
      config: "workers 2\nstdout_path 'app.log'\nstderr_path 'herd.log'")
    @server.wait_for(/ready: 2 workers/)
    4.times { |n| @server.body("/old-#{n}") }
    # What logrotate does: rename, then `postrotate kill -USR1 $(cat herd.pid)`.
    File.rename(@server.path("app.log"), @server.path("app.log.1"))
    File.rename(@server.path("herd.log"), @server.path("herd.log.1"))
    @server.signal("USR1")
    @server.wait_for(/monitor: USR1: reopened .*app\.log.*herd\.log/)
    @server.wait_for(/mold \(gen 0\): reopened/)
    # Workers reopen between requests: each is idle, so at once.
    @server.wait_for(/worker 0 \(gen 0\): reopened/)
    @server.wait_for(/worker 1 \(gen 0\): reopened/)
    4.times { |n| @server.body("/new-#{n}") }
    @server.signal("QUIT")
    @server.wait

    old = File.read(@server.path("app.log.1"))
    new = File.read(@server.path("app.log"))
    4.times do |n|
      assert_includes old, "request /old-#{n} "
      assert_includes new, "request /new-#{n} "
      refute_includes old, "request /new-#{n} "
    end
    assert_match(/monitor: stopped/, File.read(@server.path("herd.log")))
    refute_match(/monitor: stopped/, File.read(@server.path("herd.log.1")))
  end

  def test_the_pidfile_names_the_monitor_and_goes_away_with_it
    @server = Herd::ServerHarness.new(app: LINES_APP, config: "workers 1\npidfile 'herd.pid'", logs: FILES)
    @server.wait_for(/ready: 1 workers/)
    assert_equal @server.pid, Integer(File.read(@server.path("herd.pid")))
    second = Open3.capture3(RbConfig.ruby, "-I", File.join(ROOT, "lib"), File.join(ROOT, "exe", "herd"), "serve",
      "config.ru", "-c", "herd.rb", "-l", "127.0.0.1:0", chdir: @server.dir)
    assert_equal 1, second[2].exitstatus
    assert_match(/pidfile .*herd\.pid names pid #{@server.pid}, which is running/, second[1])
    assert_equal 1, second[1].lines.size, "one line, no backtrace"
    @server.signal("QUIT")
    @server.wait
    refute File.exist?(@server.path("herd.pid"))
  end
end
