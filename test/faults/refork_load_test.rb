# frozen_string_literal: true

require "test_helper"
require "support/fault_server"

# Reforks (USR2, refork_after) and SIGKILLs of the mold while 4 clients keep
# the workers busy: no request may fail, and the monitor's descriptors stay
# flat.
class FaultReforkLoadTest < Herd::Test
  include Herd::FaultServer

  WORKERS = 2

  def self.test_timeout
    150
  end

  def teardown
    @load&.stop
    @server&.cleanup
  end

  def test_usr2_reforks_under_load_fail_no_request_and_keep_the_monitors_descriptors_flat
    serve(args: ["-w", WORKERS.to_s])
    reforks = 12
    counts = {}
    (1..reforks).each do |round|
      generation = refork_by_usr2
      settle(generation)
      counts[round] = [Herd::Procfs.fds(@server.pid), child_titles(@server).size] if [2, reforks].include?(round)
      @load.wait_for_requests(8)
    end
    requests = finish("#{reforks} USR2 reforks under load", reforks: reforks, monitor_fds: counts.values.map(&:first).join("->"))
    assert_equal counts[2], counts[reforks], "monitor descriptors and children after refork 2 and #{reforks}"
    assert_equal "herd mold (gen #{current_mold(@server)[0]})", child_titles(@server).first
    assert_operator requests, :>, reforks * 8
  end

  def test_refork_after_under_load_fails_no_request
    serve(config: "workers #{WORKERS}\nrefork_after [25]\n")
    @server.wait_for(/mold \(gen 6\), pid \d+ ready/, timeout: 60)
    settle(current_mold(@server)[0])
    fds_before = Herd::Procfs.fds(@server.pid)
    @server.wait_for(/mold \(gen 10\), pid \d+ ready/, timeout: 60)
    generation = current_mold(@server)[0]
    settle(generation)
    finish("refork_after 25 under load", generations: generation, monitor_fds: "#{fds_before}->#{Herd::Procfs.fds(@server.pid)}")
    assert_equal fds_before, Herd::Procfs.fds(@server.pid), "monitor descriptors after generation 6 and #{generation}"
  end

  def test_sigkill_of_the_mold_under_load_fails_no_request_and_a_new_mold_comes_back
    serve(args: ["-w", WORKERS.to_s])
    kills = 5
    kills.times do
      generation, pid = current_mold(@server)
      mark = @server.mark
      Process.kill(:KILL, pid)
      @server.wait_for(/mold \(gen #{generation}\), pid #{pid} was killed by SIGKILL/, after: mark)
      match = @server.wait_for(/mold \(gen (\d+)\), pid (?!#{pid}\b)\d+ ready/, after: mark)
      settle(Integer(match[1]))
      @load.wait_for_requests(8)
    end
    finish("mold SIGKILL under load", mold_kills: kills, last_generation: current_mold(@server)[0])
    titles = child_titles(@server)
    assert_equal 1, titles.count { |title| title.start_with?("herd mold") }, titles.inspect
  end

  private

  def serve(**options)
    @server = Herd::ServerHarness.new(app: WORK_APP, **options)
    @load = Herd::FaultLoad.new(port: @server.port, clients: 4, path: ->(id) { "/work/#{id}/#{[5, 20, 40][id % 3]}" }).start
    assert @load.wait_for_requests(10), "the load never got going; log:\n#{log_tail(@server)}"
  end

  # @return [Integer] the generation of the new mold
  def refork_by_usr2
    mark = @server.mark
    @server.signal("USR2")
    match = @server.wait_for(/refork \(USR2\): promoting worker .* to mold \(gen (\d+)\)/, after: mark)
    generation = Integer(match[1])
    @server.wait_for(/mold \(gen #{generation}\), pid \d+ ready/, after: mark)
    generation
  end

  def settle(generation)
    super(@server, workers: WORKERS, generation: generation)
  end

  # Stops the load, reports, and asserts that nothing failed.
  # @return [Integer] requests sent
  def finish(name, **more)
    requests = stop_load(@load, @server, name, **more)
    assert_match(/200/, @server.get("/work/0/0").lines.first)
    requests.size
  end
end
