# frozen_string_literal: true

require "test_helper"
require "support/fault_server"

# HUP reloads while 4 clients keep the workers busy: new code each time (and
# once a release that does not boot), no failed request, and every response
# after a roll from the new code.
class FaultReloadLoadTest < Herd::Test
  include Herd::FaultServer

  WORKERS = 2
  # Like WORK_APP (FaultLoad reads "pid=" first), with the release it
  # booted from in each response's body.
  APP = <<~RUBY
    RELEASE = File.exist?("release") ? File.read("release").strip : "r0"
    run ->(env) {
      _, _, id, ms = env["PATH_INFO"].split("/")
      sleep(ms.to_i / 1000.0)
      [200, {"content-type" => "text/plain"}, ["pid=\#{Process.pid} id=\#{id} release=\#{RELEASE}\\n"]]
    }
  RUBY

  def self.test_timeout
    200
  end

  def teardown
    @load&.stop
    @server&.cleanup
  end

  def release(name)
    File.write(File.join(@server.dir, "release"), "#{name}\n")
  end

  def test_reloads_under_load_fail_no_request_and_roll_every_worker_onto_the_new_code
    @server = Herd::ServerHarness.new(app: APP, args: ["-w", WORKERS.to_s])
    @server.ready
    @load = Herd::FaultLoad.new(port: @server.port, clients: 4, path: ->(id) { "/work/#{id}/#{[5, 20, 40][id % 3]}" }).start
    assert @load.wait_for_requests(10), "the load never got going"
    generation = 0
    releases = %w[r1 r2 broken r3 r4]
    releases.each do |name|
      mark = @server.mark
      if name == "broken"
        File.write(File.join(@server.dir, "config.ru"), "raise 'a release that does not boot'\n")
        @server.signal("HUP")
        @server.wait_for(/reload failed: mold \(gen \d+\) exited with status 1 \(RuntimeError: a release that does not boot\)/, after: mark)
        File.write(File.join(@server.dir, "config.ru"), APP)
        next
      end
      release(name)
      @server.signal("HUP")
      generation = Integer(@server.wait_for(/HUP: booting mold \(gen (\d+)\)/, after: mark)[1])
      settle(@server, workers: WORKERS, generation: generation)
      bodies = Array.new(6) { @server.get("/work/x/0") }
      assert bodies.all? { |body| body.include?("release=#{name}\n") }, "after the roll onto #{name}: #{bodies.inspect}"
      @load.wait_for_requests(8)
    end
    stop_load(@load, @server, "#{releases.size} HUP reloads under load (one release broken)", last_generation: generation)
  end
end
