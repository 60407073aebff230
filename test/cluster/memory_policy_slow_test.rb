# frozen_string_literal: true

require "test_helper"
require "support/control_server"

# refork_when and worker_memory_limit on a server whose app grows its
# memory on purpose: GET /grow?mb=N keeps N MiB of private, written memory.
class ServerMemoryPolicySlowTest < Herd::ControlServerTest
  APP = <<~RUBY
    HOG = []
    run ->(env) {
      mb = env["QUERY_STRING"][/mb=(\\d+)/, 1].to_i
      HOG << ("x" * (mb * 1024 * 1024)) if mb > 0
      sleep 0.01 until File.exist?("release") if env["QUERY_STRING"].include?("hold")
      [200, {}, ["pid=\#{Process.pid} hog=\#{HOG.sum(&:bytesize) >> 20}\\n"]]
    }
  RUBY

  def serve(config)
    serve_with_control(app: APP, config: "workers 1\n#{config}")
  end

  # The worker goes over the limit while it serves a request: the request
  # completes, then the worker leaves and another takes its place.
  def test_a_worker_over_worker_memory_limit_finishes_its_request_and_is_replaced
    serve("worker_memory_limit 40\nrollout_max_surge 0\n") # one out, then one in (the surge has its test below)
    pid = @server.get("/")[/pid=(\d+)/, 1]
    response = nil
    @holder = Thread.new { response = @server.get("/grow?mb=64&hold") }
    @server.wait_for(/worker 0 \(gen 0\), pid #{pid}: USS [\d.]+ MiB is over worker_memory_limit 40 MiB; it finishes its request and is replaced/)
    assert Herd::Procfs.alive?(Integer(pid)), "still serving its request"
    release_held_requests
    @holder.join(10)
    assert_match(/\AHTTP\/1\.1 200.*pid=#{pid} hog=64/m, response)
    @server.wait_for(/worker 0 \(gen 0\), pid #{pid} exited with status 0/)
    @server.wait_for(/worker 0 \(gen 0\), pid (?!#{pid})\d+ ready/)
    assert_match(/pid=(?!#{pid})\d+ hog=0/, @server.get("/"))
    stats = control_stats(@address)
    assert_equal 1, stats["counters"]["memory_limit_replacements"]
    assert_equal 0, stats["counters"]["worker_deaths_by_signal"]["total"]
  end

  # With rollout_max_surge the replacement comes first: it is ready while
  # the worker over the limit still serves its request.
  def test_with_a_surge_a_worker_over_the_limit_is_replaced_before_it_stops
    serve("worker_memory_limit 40\nrollout_max_surge 1\nrollout_max_unavailable 0\n")
    pid = @server.get("/")[/pid=(\d+)/, 1]
    response = nil
    @holder = Thread.new { response = @server.get("/grow?mb=64&hold") }
    @server.wait_for(/worker 0 \(gen 0\), pid #{pid}: USS [\d.]+ MiB is over worker_memory_limit 40 MiB; its replacement is forked first/)
    @server.wait_for(/worker 0 \(gen 0\), pid (?!#{pid})\d+ ready/)
    assert Herd::Procfs.alive?(Integer(pid)), "still serving its request"
    release_held_requests
    @holder.join(10)
    assert_match(/\AHTTP\/1\.1 200.*pid=#{pid} hog=64/m, response)
    @server.wait_for(/worker 0 \(gen 0\), pid #{pid} exited with status 0/)
    assert_equal 1, control_stats(@address)["counters"]["memory_limit_replacements"]
  end

  def test_refork_when_sharing_eroded_reforks_and_says_why
    serve("refork_when shared_below: 0.5, uss_above: 1000\n")
    wait_for_stats(@address, what: "the worker measured") { |doc| doc["memory"]["workers_shared_ratio"] }
    @server.get("/grow?mb=64")
    match = @server.wait_for(/refork \(refork_when: workers (\d+)% shared, below shared_below 50%\): promoting worker 0 \(gen 0\)/)
    assert_operator Integer(match[1]), :<, 50
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    stats = wait_for_stats(@address, what: "the refork recorded") { |doc| doc["rollouts"].any? { |r| r["outcome"] == "ready" } }
    assert_match(/\Arefork_when: workers \d+% shared/, stats["rollouts"].first["reason"])
    # The new generation's worker shares what its mold (the promoted worker) grew.
    stats = wait_for_stats(@address, what: "generation 1's worker measured") do |doc|
      doc["processes"].any? { |process| process["role"] == "worker" && process["generation"] == 1 && process["pss"] }
    end
    worker = stats["processes"].find { |process| process["role"] == "worker" }
    assert_operator worker["shared_ratio"], :>, 0.5
    assert_equal 1, stats["counters"]["reforks"]
  end
end
