# frozen_string_literal: true

require "test_helper"
require "support/control_server"
require "support/prometheus_text"

# control_listen: /stats and /metrics from a running server.
class ServerControlTest < Herd::ControlServerTest
  # GET /hold waits until the test creates the file "release" (no timing).
  APP = <<~RUBY
    run ->(env) {
      sleep 0.01 until File.exist?("release") if env["PATH_INFO"] == "/hold"
      [200, {}, ["ok\n"]]
    }
  RUBY

  def serve(control, workers: 2)
    serve_with_control(control: control, app: APP, config: "workers #{workers}\n")
  end

  def test_stats_over_a_unix_socket_show_each_process_its_request_and_its_memory
    address = serve("unix:herd.sock")
    path = address.delete_prefix("unix:")
    assert_equal File.join(File.realpath(@server.dir), "herd.sock"), File.realpath(path)
    assert_equal 0o600, File.stat(path).mode & 0o777
    assert_match(/\Aherd monitor control=unix:#{Regexp.escape(path)}/, Herd::Memory::ProcessTree.new.title(@server.pid))
    3.times { @server.get("/") }
    @holder = Thread.new { @server.get("/hold?id=7") }
    stats = wait_for_stats(address, what: "a busy worker, every process measured") do |doc|
      doc["processes"].all? { |process| process["pss"] } && doc["processes"].any? { |process| process["state"] == "busy" }
    end
    roles = stats["processes"].map { |process| process["role"] }
    assert_equal %w[monitor mold worker worker], roles.first(4)
    busy = stats["processes"].find { |process| process["state"] == "busy" }
    assert_equal "GET /hold?id=7", busy["request"]
    assert_operator busy["request_age"], :>=, 0
    assert(stats["processes"].first(4).all? { |process| process["pss"].positive? && process["uss"].positive? })
    assert_equal 3, stats["counters"]["requests"]
    assert_equal [0, 3], stats["generations"].map { |gen| gen.values_at("generation", "processes") }.first
    assert_operator stats["memory"]["pss"], :>=, stats["processes"].sum { |process| process["pss"].to_i } * 0.5
    release_held_requests
  end

  def test_metrics_parse_strictly_and_count_deaths_and_reforks
    address = serve("127.0.0.1:0", workers: 1)
    assert_match(/\A127\.0\.0\.1:\d+\z/, address)
    @server.get("/")
    worker = control_stats(address)["processes"].find { |process| process["role"] == "worker" }
    Process.kill(:KILL, worker["pid"])
    @server.wait_for(/worker 0 \(gen 0\), pid #{worker["pid"]} was killed by SIGKILL/)
    @server.wait_for(/worker 0 \(gen 0\), pid (?!#{worker["pid"]})\d+ ready/)
    @server.signal("USR2")
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    stats = wait_for_stats(address, what: "generation 1's worker measured") do |doc|
      doc["processes"].any? { |process| process["role"] == "worker" && process["generation"] == 1 && process["pss"] }
    end
    assert_equal({"total" => 1, "by_signal" => {"KILL" => 1}}, stats["counters"]["worker_deaths_by_signal"])
    refork = stats["rollouts"].first
    assert_equal ["refork", "USR2", 0, 1, "ready"], refork.values_at("kind", "reason", "from_generation", "generation", "outcome")
    assert_operator refork["duration"], :>, 0

    status, head, body = control_get(address, "/metrics")
    assert_equal 200, status
    assert_match(%r{content-type: text/plain; version=0\.0\.4}, head)
    families = Herd::PrometheusText.parse(body)
    assert_equal [1.0], families.fetch("herd_worker_deaths_total").samples.map(&:value)
    assert_equal [1.0], families.fetch("herd_reforks_total").samples.map(&:value)
    assert_equal [1.0], families.fetch("herd_generation").samples.map(&:value)
    assert_operator families.fetch("herd_tree_pss_bytes").samples.first.value, :>, 0
    assert_equal %w[monitor mold worker].sort, families.fetch("herd_process_pss_bytes").samples.map { |s| s.labels["role"] }.uniq.sort

    assert_equal 404, control_get(address, "/nope").first
    assert_equal 405, control_get(address, "/stats", method: "POST").first
  end

  def test_a_control_address_that_cannot_be_bound_stops_the_server_at_boot_in_one_line
    blocker = TCPServer.new("127.0.0.1", 0)
    @server = Herd::ServerHarness.new(config: "control_listen \"127.0.0.1:#{blocker.addr[1]}\"\n")
    status = @server.wait
    refute status.success?
    assert_match(/cannot listen on 127\.0\.0\.1:#{blocker.addr[1]}/, @server.lines.join)
  ensure
    blocker&.close
  end
end
