# frozen_string_literal: true

require "test_helper"
require "support/fault_server"

# SIGKILL of workers while 4 clients keep 3 workers busy: only a request in
# flight on a killed worker may fail, the monitor names that request, and the
# worker count comes back.
class FaultWorkerKillTest < Herd::Test
  include Herd::FaultServer

  WORKERS = 3
  KILLS = 8
  # A kill: the pid, its worker number and generation, and the time just
  # before and just after Process.kill.
  Kill = Struct.new(:pid, :number, :generation, :before, :after, :chose, keyword_init: true)

  def self.test_timeout
    120
  end

  def teardown
    @load&.stop
    @server&.cleanup
  end

  def test_sigkill_of_workers_under_load_fails_only_their_requests_in_flight
    @server = Herd::ServerHarness.new(app: WORK_APP, args: ["-w", WORKERS.to_s])
    @load = Herd::FaultLoad.new(port: @server.port, clients: 4, path: ->(id) { "/work/#{id}/#{[60, 120, 200][id % 3]}" },
      think: 0.15).start
    assert @load.wait_for_requests(20), "the load never got going; log:\n#{log_tail(@server)}"

    # Even rounds kill a busy worker if there is one, odd rounds an idle one.
    kills = Array.new(KILLS) { |round| kill_a_worker(prefer_busy: round.even?) }
    @load.wait_for_requests(20)
    requests = @load.stop

    records = app_records(@server)
    failures = requests.reject(&:ok?)
    explanations = explain(failures, kills, records)
    busy_kills = kills.filter_map { |kill| [kill, in_flight(kill, records)] if in_flight(kill, records) }
    report("worker SIGKILL under load", requests: requests.size, failures: failures.size, explained: explanations.size,
      kills: kills.size, killed_while_busy: busy_kills.size, killed_while_idle: kills.size - busy_kills.size)

    unexplained = failures.reject { |request| explanations.key?(request.id) }
    assert_empty unexplained.map(&:to_s), "failed requests that no kill explains; kills:\n#{kills.map(&:to_h).join("\n")}"
    assert_operator requests.count(&:ok?), :>, requests.size / 2
    busy_kills.each do |kill, record|
      assert failures.any? { |request| request.id == record.id },
        "request #{record.id}, in flight on killed pid #{kill.pid}, did not fail"
    end
    refute_empty busy_kills, "no kill landed on a busy worker (kills:\n#{kills.map(&:to_h).join("\n")})"

    titles = wait_for_tree(@server, workers: WORKERS)
    assert_equal WORKERS, titles.count { |title| title.start_with?("herd worker") }, "workers after the kills: #{titles}"
    assert_match(/200/, @server.get("/work/0/0").lines.first)

    # The monitor names the request each busy worker was killed during.
    busy_kills.each do |kill, record|
      path = requests.find { |request| request.id == record.id }.path
      @server.wait_for(/worker #{kill.number} \(gen #{kill.generation}\), pid #{kill.pid} was killed by SIGKILL while serving GET #{Regexp.escape(path)} \(\d+(?:\.\d+)?s\)/, timeout: 5)
    end
  end

  private

  # Kills one worker (busy if asked and there is one), then waits for its
  # replacement.
  def kill_a_worker(prefer_busy:)
    workers = wait_for_workers
    busy = busy_pids(@server) & workers.keys
    idle = workers.keys - busy
    pool = prefer_busy ? busy : idle
    pid = (pool.empty? ? workers.keys : pool).sample
    mark = @server.mark
    before = now
    Process.kill(:KILL, pid)
    kill = Kill.new(pid: pid, **workers.fetch(pid), before: before, after: now,
      chose: busy.include?(pid) ? :busy : :idle)
    @server.wait_for(/worker #{kill.number} \(gen \d+\), pid (?!#{pid}\b)\d+ ready/, after: mark)
    @load.wait_for_requests(6)
    kill
  end

  def wait_for_workers
    Herd::Waiting.wait_until("#{WORKERS} workers back", interval: 0.01, detail: -> { "log:\n#{log_tail(@server)}" }) do
      live_workers(@server).then { |workers| workers if workers.size == WORKERS }
    end
  end

  # @return [Record, nil] the request the app was serving in the killed worker
  def in_flight(kill, records)
    records.values.find { |record| record.pid == kill.pid && record.started < kill.after && record.ended.nil? }
  end

  # A failed request is explained by a kill when the app saw it in the
  # killed worker, which was killed while the client waited (the app may
  # have finished and the response not be written yet), or, if the app
  # never saw it, when the kill happened while it was pending and that kill
  # explains nothing else (the worker accepted it and died before the app
  # ran: a worker holds one request at a time).
  # @return [Hash{Integer => Kill}] request id => the kill that explains it
  def explain(failures, kills, records)
    explained = {}
    used = {}
    failures.each do |request|
      record = records[request.id]
      next unless record

      kill = kills.find do |candidate|
        candidate.pid == record.pid && record.started < candidate.after &&
          request.started < candidate.after && request.ended > candidate.before
      end
      next unless kill && !used[kill.pid]

      explained[request.id] = used[kill.pid] = kill
    end
    failures.each do |request|
      next if explained.key?(request.id) || records.key?(request.id)

      kill = kills.find do |candidate|
        !used[candidate.pid] && in_flight(candidate, records).nil? &&
          request.started < candidate.after && request.ended > candidate.before
      end
      explained[request.id] = used[kill.pid] = kill if kill
    end
    explained
  end
end
