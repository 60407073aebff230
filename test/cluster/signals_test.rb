# frozen_string_literal: true

require "test_helper"
require "support/server_harness"

class ServerSignalsTest < Herd::Test
  # GET /slow lasts until the test creates the file "release": the signal
  # lands while it is in flight, whatever the machine's speed.
  SLOW_APP = <<~RUBY
    run ->(env) {
      if env["PATH_INFO"] == "/slow"
        File.write("slow-started", "")
        sleep 0.01 until File.exist?("release")
      end
      [200, {"content-type" => "text/plain"}, ["done \#{env["PATH_INFO"]}"]]
    }
  RUBY

  def teardown
    @server&.cleanup
  end

  # Starts a slow request, waits until the app has it, signals the monitor,
  # and returns the response of the slow request. With `release`: once the
  # monitor logged that line (the stop it began), the request may finish;
  # without, it never does on its own.
  def slow_request_across(signal, release: nil)
    @server = Herd::ServerHarness.new(app: SLOW_APP, args: ["-w", "1"], config: "shutdown_timeout 10\n")
    @server.ready
    client = Thread.new { @server.get("/slow") }
    marker = File.join(@server.dir, "slow-started")
    sleep 0.01 until File.exist?(marker) || !client.alive?
    @server.signal(signal)
    if release
      @server.wait_for(release)
      FileUtils.touch(File.join(@server.dir, "release"))
    end
    client.value
  end

  %w[QUIT TERM].each do |signal|
    define_method("test_#{signal}_finishes_requests_in_flight_then_exits") do
      response = slow_request_across(signal, release: /#{signal}: graceful stop/)
      assert_match(%r{\AHTTP/1.1 200}, response)
      assert_match(/done \/slow/, response)
      assert_equal 0, @server.wait.exitstatus
      @server.wait_for(/#{signal}: graceful stop/)
      @server.wait_for(/monitor: stopped/)
    end
  end

  def test_INT_stops_at_once
    response = slow_request_across("INT")
    refute_match(/done \/slow/, response, "an immediate stop does not wait for the request")
    @server.wait
    @server.wait_for(/INT: immediate stop/)
  end

  def test_TTIN_and_TTOU_add_and_remove_workers
    @server = Herd::ServerHarness.new(args: ["-w", "1"])
    @server.ready
    @server.signal("TTIN")
    @server.wait_for(/workers: 1 -> 2/)
    @server.wait_for(/worker 1 \(gen 0\), pid \d+ ready/)
    @server.signal("TTIN")
    @server.wait_for(/worker 2 \(gen 0\), pid \d+ ready/)
    assert_equal 4, @server.descendants.size
    @server.signal("TTOU")
    @server.wait_for(/worker 2 \(gen 0\), pid \d+ asked to stop \(workers: 2\)/)
    @server.wait_for(/worker 2 \(gen 0\), pid \d+ exited with status 0/)
    assert_match(/200/, @server.get("/").lines.first)
  end
end
