# frozen_string_literal: true

require "test_helper"
require "support/control_client"
require "support/fault_server"

# Bursts of mixed signals under load, to the monitor and to its children.
# Required: a child never dies of (or stops on) a signal meant for the
# monitor; USR1 reopens the logs; no signal takes the monitor down; after
# the burst the server serves with the configured worker count, no request
# failed, and a final QUIT stops everything with nothing left.
# HERD_FAULT_SEED=N replays a run's signals and gaps.
class FaultSignalBurstTest < Herd::Test
  include Herd::FaultServer
  include Herd::ControlClient

  WORKERS = 2
  TO_MONITOR = %w[TTIN TTOU USR2 USR1 HUP].freeze
  TO_CHILDREN = %w[USR1 USR2 HUP TTIN TTOU WINCH].freeze
  CONTROL_SOCKET = "control.sock"

  def self.test_timeout
    120
  end

  def setup
    @seed = Integer(ENV.fetch("HERD_FAULT_SEED") { Random.new_seed % 1_000_000 })
    @random = Random.new(@seed)
  end

  def teardown
    @load&.stop
    @server&.cleanup
  end

  def test_a_burst_of_signals_to_the_monitor_leaves_it_serving_with_its_worker_count
    burst_to_the_monitor("burst of %d signals to the monitor")
  end

  # The same with surge rollouts: every USR2 and HUP forks replacements
  # next to the workers they replace, while TTIN and TTOU move the target.
  def test_a_burst_of_signals_during_surge_rollouts
    burst_to_the_monitor("burst of %d signals to the monitor, rollout_max_surge 1",
      config: "rollout_max_surge 1\nrollout_max_unavailable 0\n")
  end

  def burst_to_the_monitor(name, config: nil)
    serve(config: config)
    burst = Array.new(40) { TO_MONITOR.sample(random: @random) }
    burst.each do |signal|
      @server.signal(signal)
      sleep(@random.rand(0.02))
    end
    assert_monitor_alive("after a burst of #{burst.tally}")
    # The burst may have left no worker at all (TTOU down to 0): requests
    # wait in the backlog until TTIN brings workers back.
    back_to(WORKERS)
    settle(@server, workers: WORKERS)
    @load.wait_for_requests(10)
    assert_no_child_killed
    assert_usr1_reopens_the_access_log
    finish("#{format(name, burst.size)} (seed #{@seed})", signals: burst.tally.map { |signal, count| "#{signal}x#{count}" }.join(","))
  end

  def test_signals_meant_for_the_monitor_neither_kill_nor_stop_a_worker_or_the_mold
    serve
    worker = live_workers(@server).keys.first
    generation, mold = current_mold(@server)
    burst = TO_CHILDREN.flat_map { |signal| [[signal, worker], [signal, mold]] * 3 }.shuffle(random: @random)
    burst_started = now
    gone = {}
    burst.each do |signal, pid|
      # A pid that died is not signalled again: it may be someone else's by now.
      next if gone[pid]
      next gone[pid] = "before #{signal}" unless Herd::Procfs.alive?(pid) && Herd::Procfs.in_group?(pid, @server.pid)

      Process.kill(signal, pid)
      sleep(@random.rand(0.02))
    end
    assert_monitor_alive("after signals to its children")

    # Each got every signal and is still there, running.
    problems = [["worker", worker], ["mold", mold]].filter_map do |role, pid|
      death = @server.lines.dup.grep(/pid #{pid} (exited|was killed)/).first
      if death then "the #{role} (pid #{pid}) died of a signal meant for the monitor (gone #{gone[pid]}): #{death.strip}"
      elsif Herd::Procfs.state(pid) == "T" then "the #{role} (pid #{pid}) is stopped (TTIN/TTOU's default action)"
      elsif !Herd::Procfs.alive?(pid) then "the #{role} (pid #{pid}) is gone"
      end
    end
    assert_empty problems, "log:\n#{log_tail(@server)}"
    # The worker serves again; the mold still forks workers.
    served = Herd::Waiting.poll(timeout: 10) { @load.requests.dup.any? { |request| request.pid == worker && request.started > burst_started } }
    assert served, "worker pid #{worker} served no request in 10 s after the burst (state #{Herd::Procfs.state(worker).inspect})"
    mark = @server.mark
    @server.signal("TTIN")
    @server.wait_for(/worker #{WORKERS} \(gen #{generation}\), pid \d+ ready/, after: mark)
    back_to(WORKERS)
    settle(@server, workers: WORKERS)
    assert_equal [generation, mold], current_mold(@server), "the mold was replaced"
    assert_no_child_killed
    finish("burst of #{burst.size} signals to a worker and the mold (seed #{@seed})",
      signals: TO_CHILDREN.map { |name| "#{name}x6" }.join(","))
  end

  private

  def serve(config: nil)
    @server = Herd::ServerHarness.new(app: WORK_APP, config: "control_listen \"unix:#{CONTROL_SOCKET}\"\n#{config}", args: ["-w", WORKERS.to_s, "--access-log", "access.log"])
    @load = Herd::FaultLoad.new(port: @server.port, clients: 4, path: ->(id) { "/work/#{id}/#{[2, 10, 30][id % 3]}" }).start
    assert @load.wait_for_requests(10), "the load never got going; log:\n#{log_tail(@server)}"
  end

  def assert_monitor_alive(what)
    status = @server.exited
    return unless status

    flunk "the monitor died #{what}: #{status.inspect}; log:\n#{log_tail(@server)}"
  end

  # No child died of a signal, and nothing crashed.
  def assert_no_child_killed
    bad = @server.lines.grep(/was killed by SIG|crashed|failed/)
    assert_empty bad, "log:\n#{log_tail(@server)}"
  end

  # TTIN / TTOU one at a time until the monitor's workers target is
  # `workers` again. The target is read from the monitor (/stats), not from
  # the log: signals that arrive together are handled in the order of their
  # numbers (docs/SIGNALS.md), so the log's last "workers: a -> b" line may
  # not be the burst's last word yet.
  def back_to(workers)
    loop do
      target = workers_target
      return if target == workers

      @server.signal((target < workers) ? "TTIN" : "TTOU")
      Herd::Waiting.wait_until("the monitor's workers target to leave #{target}", timeout: 10,
        detail: -> { "log:\n#{log_tail(@server)}" }) { control_stats(control_address).dig("server", "workers_target") != target }
    end
  end

  # The target once the monitor has handled every signal sent so far. A
  # turn of its loop may answer /stats before it handles the signals that
  # arrived during that turn; the second of two answers in a row comes from
  # a later turn, after all of them.
  def workers_target
    control_stats(control_address)
    control_stats(control_address).dig("server", "workers_target")
  end

  def control_address
    "unix:#{File.join(@server.dir, CONTROL_SOCKET)}"
  end

  # logrotate: the access log is renamed, USR1 goes to the monitor, and
  # every worker writes to a new access.log from then on (after at most the
  # request it was serving).
  # Every worker serving after the USR1 writes to the new file. The set is
  # read again each round: a USR2 or HUP of the burst that the monitor
  # deferred may still promote a worker to mold or roll the generation, and
  # a worker that no longer serves has nothing left to log (its
  # replacements open the new path themselves, and must write there too).
  def assert_usr1_reopens_the_access_log
    path = File.join(@server.dir, "access.log")
    File.rename(path, "#{path}.1")
    @server.signal("USR1")
    seen = {}
    id = 1_000_000
    deadline = now + 15
    workers = reopened = []
    until now > deadline
      # Two at once, so that both workers get one.
      Array.new(2) { Thread.new(id += 1) { |mine| [mine, @server.get("/work/#{mine}/50")[/^pid=(\d+)/, 1].to_i] } }.map(&:value)
        .each { |mine, pid| seen[mine] = pid }
      logged = File.exist?(path) ? File.read(path).scan(%r{GET /work/(\d+)/}).flatten.map(&:to_i) : []
      reopened = logged.filter_map { |mine| seen[mine] }.uniq
      workers = live_workers(@server).keys
      break if !workers.empty? && (workers - reopened).empty?
    end
    assert File.exist?(path), "no new access.log after USR1; log:\n#{log_tail(@server)}"
    refute_empty workers, "no worker serving after USR1; log:\n#{log_tail(@server)}"
    assert_empty workers - reopened, "workers still writing to the renamed access.log; log:\n#{log_tail(@server)}"
    assert_monitor_alive("after USR1")
  end

  # Stops the load, asserts that no request failed, then QUIT: everything stops.
  def finish(name, **more)
    stop_load(@load, @server, name, **more)
    @server.signal("QUIT")
    assert_equal 0, @server.wait.exitstatus, log_tail(@server)
    @server.wait_for(/monitor: stopped/)
    assert_empty @server.processes_left, "processes left in herd's process group after QUIT"
  end
end
