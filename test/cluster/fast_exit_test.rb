# frozen_string_literal: true

require "test_helper"
require "support/server_harness"

# Workers and molds that end gracefully run the app's at_exit hooks, then
# finish with exit! (ProcessExit's fast finish) instead of Ruby's walk over
# the heap, which would copy the pages they share with the live processes.
# Each process arms a witness file that only Ruby's whole exit removes
# (support/exit_witness.rb).
class ServerFastExitTest < Herd::Test
  WITNESS = File.expand_path("../support/exit_witness.rb", __dir__)

  APP = <<~RUBY
    require #{WITNESS.dump}
    Herd::ExitWitness.arm(File.join(Dir.pwd, "witness-\#{Process.pid}")) # the mold's
    at_exit { File.write(File.join(Dir.pwd, "at_exit-\#{Process.pid}"), "ran") }
    armed = {}
    run ->(env) {
      armed[Process.pid] ||= Herd::ExitWitness.arm(File.join(Dir.pwd, "witness-\#{Process.pid}"))
      exit if env["PATH_INFO"] == "/exit" # the app ends its own worker
      [200, {"content-type" => "text/plain"}, [Process.pid.to_s]]
    }
  RUBY

  def teardown
    @server&.cleanup
  end

  def test_a_worker_the_app_exits_and_a_server_stopped_with_QUIT_run_at_exit_hooks_and_skip_the_heap_walk
    @server = Herd::ServerHarness.new(app: APP, config: "workers 1", logs: {out: "app.log", err: "herd.log"})
    @server.wait_for(/ready: 1 workers/)
    first = Integer(@server.body("/"))
    begin
      @server.body("/exit")
    rescue Minitest::Assertion, SystemCallError
      nil # the worker left without answering
    end
    @server.wait_for(/worker 0 \(gen 0\), pid #{first} exited with status 0/)
    second = Integer(wait_for_new_worker(first))
    mold = Integer(@server.wait_for(/mold \(gen 0\), pid (\d+) ready/)[1])
    @server.signal("QUIT")
    assert_equal 0, @server.wait.exitstatus

    [first, second, mold].each do |pid|
      assert File.exist?(@server.path("at_exit-#{pid}")), "pid #{pid} ran the app's at_exit hook"
      assert File.exist?(@server.path("witness-#{pid}")), "pid #{pid} finished with exit!, not Ruby's heap walk"
    end
  end

  private

  def wait_for_new_worker(old)
    @server.wait_for(/worker 0 \(gen 0\), pid (?!#{old}\b)\d+ ready/)
    @server.body("/")
  end
end
