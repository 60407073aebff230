# frozen_string_literal: true

require "test_helper"
require "support/server_harness"

# Signals an operator sends, to the monitor and, by mistake, to its children.
class ServerOperatorSignalsSlowTest < Herd::Test
  SLOW_APP = <<~RUBY
    run ->(env) {
      if env["PATH_INFO"] == "/slow"
        File.write("slow-started", "")
        sleep 30
      end
      [200, {"content-type" => "text/plain"}, ["\#{Process.pid}"]]
    }
  RUBY

  def teardown
    @server&.cleanup
  end

  def pid_of(pattern, after: 0)
    Integer(@server.wait_for(pattern, after: after)[1])
  end

  def test_USR1_and_stray_signals_never_take_the_monitor_down
    @server = Herd::ServerHarness.new(args: ["-w", "1"])
    @server.ready
    %w[USR1 ALRM PWR XCPU WINCH].each { |name| @server.signal(name) }
    @server.wait_for(/monitor: USR1: reopened no file/)
    %w[ALRM PWR XCPU].each { |name| @server.wait_for(/monitor: SIG#{name} ignored/) }
    assert_match(/200 OK/, @server.get("/after"))
    assert Herd::Procfs.alive?(@server.pid)
  end

  def test_a_child_never_dies_of_a_signal_meant_for_the_monitor
    @server = Herd::ServerHarness.new(args: ["-w", "1"])
    @server.ready
    worker = pid_of(/worker 0 \(gen 0\), pid (\d+) ready/)
    mold = pid_of(/mold \(gen 0\), pid (\d+) ready/)
    %w[USR2 HUP TTIN TTOU WINCH USR1].each do |name|
      [worker, mold].each { |pid| Process.kill(name, pid) }
    end
    %w[USR2 HUP TTIN TTOU WINCH].each do |name|
      @server.wait_for(/worker 0 \(gen 0\): SIG#{name} ignored: signals for the server go to the monitor/)
      @server.wait_for(/mold \(gen 0\): SIG#{name} ignored/)
    end
    assert_includes @server.get("/again"), "pid=#{worker} "
    assert Herd::Procfs.alive?(mold)
    refute_match(/exited|killed/, @server.lines.join)
  end

  def test_a_worker_killed_by_a_signal_is_logged_with_the_request_it_was_serving
    @server = Herd::ServerHarness.new(app: SLOW_APP, args: ["-w", "1"])
    @server.ready
    worker = pid_of(/worker 0 \(gen 0\), pid (\d+) ready/)
    client = Thread.new { @server.get("/slow?x=1") rescue nil } # rubocop:disable Style/RescueModifier -- the connection is cut
    sleep 0.01 until File.exist?(File.join(@server.dir, "slow-started"))
    mark = @server.mark
    Process.kill(:KILL, worker)
    @server.wait_for(%r{worker 0 \(gen 0\), pid #{worker} was killed by SIGKILL while serving GET /slow\?x=1 \(\d+\.\d+s\)})
    client.join
    idle = pid_of(/worker 0 \(gen 0\), pid (\d+) ready/, after: mark)
    Process.kill(:KILL, idle)
    @server.wait_for(/worker 0 \(gen 0\), pid #{idle} was killed by SIGKILL while idle/)
  end
end
