# frozen_string_literal: true

require "test_helper"
require "support/server_harness"

# HUP: new code and settings from disk, without refusing a request.
class ServerReloadSlowTest < Herd::Test
  def self.test_timeout
    120
  end

  def app(version)
    %(run ->(env) { [200, {"content-type" => "text/plain"}, ["#{version} \#{Process.pid}"]] }\n)
  end

  def teardown
    @load&.each(&:kill)
    @server&.cleanup
  end

  # Clients that keep requesting until stopped; every response recorded
  # with the number its request took before it was sent.
  def start_load(clients = 4)
    @responses = Queue.new
    @sent = 0
    @sent_lock = Mutex.new
    @stop_load = false
    @load = Array.new(clients) do
      Thread.new do
        until @stop_load
          number = @sent_lock.synchronize { @sent += 1 }
          response = begin
            @server.get("/")
          rescue SystemCallError => e
            e.class.to_s
          end
          @responses << [number, response]
        end
      end
    end
  end

  # @return [Integer] the requests sent so far
  def sent
    @sent_lock.synchronize { @sent }
  end

  # @return [Array<Array(Integer, String)>] every request's number and response
  def stop_load
    @stop_load = true
    @load.each(&:join)
    Array.new(@responses.size) { @responses.pop }
  end

  def test_HUP_rolls_the_workers_onto_new_code_without_a_failed_request
    @server = Herd::ServerHarness.new(app: app("v1"), config: "workers 2\n")
    @server.ready
    start_load
    sleep 0.01 while @responses.size < 20
    File.write(File.join(@server.dir, "config.ru"), app("v2"))
    File.write(File.join(@server.dir, "herd.rb"), "workers 3\n")
    @server.signal("HUP")
    @server.wait_for(/monitor: HUP: workers: 2 -> 3/)
    @server.wait_for(/monitor: HUP: booting mold \(gen 1\) from config\.ru; generation 0 serves meanwhile/)
    @server.wait_for(/mold \(gen 1\), pid \d+ ready/)
    if GC.respond_to?(:compact) # a fresh mold descends from no compacted heap (compact: :auto)
      assert_match(/\+ compaction/, @server.wait_for(/mold \(gen 1\): heap prepared.*/)[0])
    end
    %w[0 1 2].each { |n| @server.wait_for(/worker #{n} \(gen 1\), pid \d+ ready/) }
    # Every worker of generation 0 has gone, including a third one the
    # monitor may have forked from the old mold while the new one booted.
    @server.lines.grep(/worker \d \(gen 0\), pid (\d+) ready/).map { |line| line[/pid (\d+)/, 1] }.each do |pid|
      @server.wait_for(/worker \d \(gen 0\), pid #{pid} exited with status 0/)
    end
    # Requests sent from here on can only reach generation 1 (a response
    # of generation 0 may still be on its way to a client thread).
    mark = sent
    sleep 0.01 while @responses.size < mark + 20
    numbered = stop_load
    responses = numbered.map(&:last)
    failed = responses.reject { |response| response.start_with?("HTTP/1.1 200") }
    versions = responses.map { |response| response[/v\d/] }
    puts "\n  HUP under load: #{responses.size} requests, #{failed.size} failed, " \
      "#{versions.count("v1")} v1, #{versions.count("v2")} v2"
    assert_empty failed
    after_roll = numbered.select { |number, _| number > mark }.map(&:last)
    refute_empty after_roll
    late = after_roll.reject { |response| response.include?("v2") }.map { |response| response[/v\d \d+/] }
    assert_empty late, "every request sent after the roll is served by the new code; log:\n#{@server.lines.join}"
    @server.wait_for(/mold \(gen 0\), pid \d+ exited with status 0/)
  end

  def test_a_new_mold_that_fails_to_boot_leaves_the_running_generation_serving
    @server = Herd::ServerHarness.new(app: app("v1"), config: "workers 1\n")
    @server.ready
    File.write(File.join(@server.dir, "config.ru"), "raise 'syntax of the day'\n")
    @server.signal("HUP")
    @server.wait_for(/monitor: reload failed: mold \(gen 1\) exited with status 1 \(RuntimeError: syntax of the day\); generation 0 keeps serving/)
    assert_match(/v1/, @server.get("/"))
    File.write(File.join(@server.dir, "herd.rb"), "workerz 2\n")
    @server.signal("HUP")
    @server.wait_for(/monitor: HUP: the config file did not load \(unknown setting `workerz` \(herd\.rb:1\); did you mean `workers`\?\); no reload, generation 0 keeps serving/)
    File.write(File.join(@server.dir, "herd.rb"), "workers 1\n")
    File.write(File.join(@server.dir, "config.ru"), app("v3"))
    @server.signal("HUP")
    @server.wait_for(/worker 0 \(gen 2\), pid \d+ ready/)
    # The replacement was forked first (rollout_max_surge): the old worker
    # serves until it has gone.
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ exited with status 0/)
    assert_match(/v3/, @server.get("/"))
  end

  def test_a_reload_starts_the_refork_schedule_over
    @server = Herd::ServerHarness.new(app: app("v1"), config: "workers 1\nrefork_after [5, 1000]\n")
    @server.ready
    6.times { @server.get("/") }
    @server.wait_for(/refork \(\d+ requests\): promoting worker 0 \(gen 0\)/)
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    File.write(File.join(@server.dir, "config.ru"), app("v2"))
    @server.signal("HUP")
    @server.wait_for(/worker 0 \(gen 2\), pid \d+ ready/)
    # The worker it replaces (the default surge) may still accept until it
    # reads its stop: the requests below must all reach the new one.
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ exited/)
    6.times { @server.get("/") }
    # The fresh generation is cold: reforked after 5 requests, not 1000.
    @server.wait_for(/refork \(\d+ requests\): promoting worker 0 \(gen 2\)/)
    @server.wait_for(/worker 0 \(gen 3\), pid \d+ ready/)
    assert_match(/v2/, @server.get("/"))
  end
end
