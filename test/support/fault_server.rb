# frozen_string_literal: true

require "herd/clock"
require "support/fault_load"
require "support/procfs"
require "support/server_harness"
require "support/waiting"

module Herd
  # What the fault-injection tests of `herd serve` share: an app that records
  # every request it serves, readers of the server's log (which pid is which
  # worker or mold), and the checks made after each fault.
  module FaultServer
    # GET /work/ID/MS: sleeps MS milliseconds. Appends "start ID PID TIME"
    # and "end ID PID TIME" (CLOCK_MONOTONIC) to requests.log, so a request
    # that failed can be matched to the worker it reached.
    WORK_APP = <<~RUBY
      REQUESTS = File.expand_path("requests.log")
      run ->(env) {
        _, _, id, ms = env["PATH_INFO"].split("/")
        pid = Process.pid
        File.write(REQUESTS, "start \#{id} \#{pid} \#{Process.clock_gettime(Process::CLOCK_MONOTONIC)}\\n", mode: "a")
        sleep(ms.to_i / 1000.0)
        File.write(REQUESTS, "end \#{id} \#{pid} \#{Process.clock_gettime(Process::CLOCK_MONOTONIC)}\\n", mode: "a")
        [200, {"content-type" => "text/plain"}, ["pid=\#{pid} id=\#{id}\\n"]]
      }
    RUBY

    WORKER_READY = /monitor: worker (\d+) \(gen (\d+)\), pid (\d+) ready/
    MOLD_READY = /monitor: mold \(gen (\d+)\), pid (\d+) ready/
    GONE = /monitor: (?:worker \d+|mold) \(gen \d+\), pid (\d+) (?:exited|was killed)/

    # What the app recorded for one request.
    Record = Struct.new(:id, :pid, :started, :ended)

    module_function

    def now
      Clock.now
    end

    # @return [Hash{Integer => Hash}] pid => {number:, generation:} of every
    #   worker the log says is ready and has not exited
    def live_workers(server)
      workers = {}
      server.lines.each do |line|
        if (match = line.match(WORKER_READY))
          workers[Integer(match[3])] = {number: Integer(match[1]), generation: Integer(match[2])}
        elsif (match = line.match(GONE))
          workers.delete(Integer(match[1]))
        end
      end
      workers
    end

    # @return [Array(Integer, Integer), nil] [generation, pid] of the newest
    #   mold the log says is ready and has not exited
    def current_mold(server)
      molds = {}
      server.lines.each do |line|
        if (match = line.match(MOLD_READY))
          molds[Integer(match[2])] = Integer(match[1])
        elsif (match = line.match(GONE))
          molds.delete(Integer(match[1]))
        end
      end
      molds.max_by { |_, generation| generation }&.then { |pid, generation| [generation, pid] }
    end

    # @return [Hash{Integer => Record}] by request id, from requests.log
    def app_records(server)
      records = {}
      path = File.join(server.dir, "requests.log")
      return records unless File.exist?(path)

      File.foreach(path) do |line|
        event, id, pid, time = line.split
        next unless time # a line being written

        record = records[Integer(id)] ||= Record.new(Integer(id), Integer(pid))
        (event == "start") ? record.started = Float(time) : record.ended = Float(time)
      end
      records
    end

    # @return [Array<Integer>] pids of workers serving a request right now
    def busy_pids(server)
      app_records(server).values.select { |record| record.ended.nil? }.map(&:pid).uniq
    end

    # @return [Array<String>] titles of the monitor's live children
    def child_titles(server)
      tree = Memory::ProcessTree.new
      server.descendants.select { |pid| Procfs.alive?(pid) && tree.ppid(pid) == server.pid }
        .filter_map { |pid| tree.title(pid)&.sub(/ requests=\d+/, "") }.sort # nil: gone since listed
    end

    # Waits (bounded) until the monitor's children are one mold and
    # `workers` workers, every one alive and not stopped.
    # @return [Array<String>] the titles last seen
    def wait_for_tree(server, workers:, timeout: 20)
      titles = nil
      Waiting.poll(timeout: timeout, interval: 0.05) do
        titles = child_titles(server)
        titles.count { |title| title.start_with?("herd worker") } == workers &&
          titles.count { |title| title.start_with?("herd mold") } == 1 && live_workers(server).size == workers
      end
      titles
    end

    # Waits until the tree is one mold (of `generation` or newer) and
    # `workers` workers of that mold's generation: old ones rolled over and
    # gone, every process alive and not stopped.
    def settle(server, workers:, generation: 0, timeout: 30)
      titles = nil
      Waiting.wait_until("the tree settling on #{workers} workers of generation #{generation} or newer", timeout: timeout,
        detail: -> { "#{titles}; log:\n#{log_tail(server)}" }) do
        live = live_workers(server)
        mold = current_mold(server)
        titles = child_titles(server)
        mold && mold.first >= generation && live.size == workers &&
          live.values.all? { |worker| worker[:generation] == mold.first } && titles.size == workers + 1 &&
          server.descendants.none? { |pid| Procfs.state(pid) == "T" }
      end
      titles
    end

    # The last lines of the server's log, for failure messages.
    def log_tail(server, count = 40)
      server.lines.last(count).join
    end

    # Stops the load, prints its summary line, and fails the test if any
    # request failed (none may).
    # @return [Array<FaultLoad::Request>] every request sent
    def stop_load(load, server, name, **more)
      requests = load.stop
      failures = requests.reject(&:ok?)
      report(name, requests: requests.size, failures: failures.size, explained: 0, **more)
      assert_empty failures.map(&:to_s), "failed requests (none may fail); log:\n#{log_tail(server)}"
      requests
    end

    # One summary line per test, on stdout.
    def report(name, requests:, failures:, explained:, **more)
      extra = more.map { |key, value| " #{key}=#{value}" }.join
      $stdout.puts "\n[faults] #{name}: sent=#{requests} ok=#{requests - failures} failed=#{failures} " \
        "explained=#{explained}#{extra}"
    end
  end
end
