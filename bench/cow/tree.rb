# frozen_string_literal: true

require "herd/memory"
require_relative "servers"
require_relative "../support/clock"
require_relative "../support/processes"
require_relative "../support/stats"
require_relative "../support/units"

module CowBench
  # A running server's process tree: whether its rollout has settled, and
  # what it costs (Herd::Memory: Σ PSS of every process, children found
  # through /proc/PID/task/*/children of every thread).
  class Tree
    SETTLE_TIMEOUT = 60
    STABLE_FOR = 1.0 # seconds the processes must stay the same

    def initialize(server, process)
      @server = server
      @process = process # HttpBench::ServerProcess
    end

    # Waits until the server runs WORKERS workers of its newest generation
    # and nothing else is forking, and that stays so for STABLE_FOR seconds;
    # gives up after SETTLE_TIMEOUT.
    # @return [Hash] :settled, :seconds, :generation, :detail (why not settled)
    def settle
      started = Bench::Clock.now
      stable_since = signature = nil
      loop do
        processes = roles
        problem = problem(processes)
        now = Bench::Clock.now
        current = processes.map { |process| process.values_at(:pid, :role, :generation) }
        stable_since = now if problem || current != signature
        signature = current
        settled = !problem && now - stable_since >= STABLE_FOR
        if settled || now - started > SETTLE_TIMEOUT
          return {settled: settled, seconds: (now - started).round(1), generation: generation(processes), detail: problem}
        end

        sleep 0.1
      end
    end

    # @return [Hash] sizes in MiB: :total_pss, :processes, :worker_pss (median), :worker_uss (median),
    #   :worker_private_dirty (median), :mold_pss, :monitor_pss, :rows (every process)
    def measure
      rows = Herd::Memory.tree(@process.pid).rows.map do |row|
        role, generation = @server.role.call(row.title)
        {pid: row.pid, ppid: row.ppid, title: row.title, role: role, generation: generation,
         pss: mib(row.sample.pss), uss: mib(row.sample.uss), private_dirty: mib(row.sample.private_dirty), rss: mib(row.sample.rss)}
      end
      workers = rows.select { |row| row[:role] == :worker }
      median = ->(key) { Bench::Stats.median(workers.map { |row| row[key] })&.round(2) }
      sum = ->(role) { rows.select { |row| row[:role] == role }.sum { |row| row[:pss] }.round(1) }
      {total_pss: rows.sum { |row| row[:pss] }.round(1), processes: rows.size, workers: workers.size,
       worker_pss: median.call(:pss), worker_uss: median.call(:uss), worker_private_dirty: median.call(:private_dirty),
       mold_pss: sum.call(:mold), monitor_pss: sum.call(:monitor), rows: rows}
    end

    private

    def roles
      Bench::Processes.of(@process.pid).map do |process|
        role, generation = @server.role.call(process[:title])
        process.merge(role: role, generation: generation)
      end
    end

    def problem(processes)
      by_role = processes.group_by { |process| process[:role] }
      workers = by_role.fetch(:worker, [])
      molds = by_role.fetch(:mold, [])
      return "#{workers.size} workers" unless workers.size == WORKERS
      return "#{by_role[:transient].size} process(es) forking" if by_role[:transient]

      generations = (workers + molds).map { |process| process[:generation] }.uniq
      return "generations #{generations.sort.join(", ")} side by side" if generations.size > 1
      return "#{molds.size} molds" if molds.size > 1

      @server.log_check&.call(log, workers + molds)
    end

    def generation(processes)
      return @server.log_generation.call(log) if @server.log_generation

      processes.filter_map { |process| process[:role] == :worker && process[:generation] }.max
    end

    def log
      File.read(@process.log_path)
    rescue SystemCallError
      ""
    end

    def mib(bytes)
      (bytes / Bench::MIB).round(2)
    end
  end
end
