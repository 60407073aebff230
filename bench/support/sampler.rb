# frozen_string_literal: true

require "herd/memory"
require_relative "clock"
require_relative "processes"
require_relative "units"

module Bench
  # Σ PSS of a server's process tree (Herd::Memory.tree of its root pid:
  # monitor or master, molds, workers, whatever they fork) every `interval`
  # seconds, in a thread of the driver (bench/rails, bench/reload, bench/cow).
  # With `titles: true` each sample also keeps every process's title and
  # PSS, what Bench::Plot draws.
  class Sampler
    # @return [Array<Hash>] :t (CLOCK_MONOTONIC), :pss (MiB), :processes; :rows ([pid, title, PSS MiB]
    #   per process) with titles: true
    attr_reader :samples

    def initialize(pid, interval:, titles: false, cpu: false, &each_sample)
      @pid = pid
      @interval = interval
      @titles = titles
      @cpu = cpu
      @each_sample = each_sample
      @samples = []
      @mutex = Mutex.new
    end

    def start
      @thread = Thread.new do
        next_at = Clock.now
        until @stop
          take
          next_at += @interval
          pause = next_at - Clock.now
          pause.positive? ? sleep(pause) : (next_at = Clock.now)
        end
      end
      self
    end

    # One more sample now, then the thread ends.
    def stop
      @stop = true
      @thread&.join
      take
      self
    end

    # @return [Hash, nil] a sample taken now
    def take
      rows = self.class.rows(@pid)
      sample = {t: Clock.now, pss: (rows.sum { |row| row.sample.pss } / MIB).round(2), processes: rows.size}
      sample[:rows] = rows.map { |row| [row.pid, row.title.to_s[0, 60], (row.sample.pss / MIB).round(2)] } if @titles
      sample[:cpu] = self.class.cpu(rows) if @cpu
      @mutex.synchronize { @samples << sample }
      @each_sample&.call(sample)
      sample
    rescue Herd::Error
      nil # the root is gone (stopping)
    end

    Row = Struct.new(:pid, :title, :sample)

    # Each process's CPU and minor faults so far (`cpu: true`), and the
    # machine's busy and idle time: bench/refork tells from them where a
    # window's CPU went.
    # @return [Hash] :processes {pid => [title, minor faults, user + system seconds]}, :busy, :idle (seconds)
    def self.cpu(rows)
      processes = rows.each_with_object({}) do |row, table|
        stat = Processes.stat("/proc/#{row.pid}/stat", zombies: true)
        table[row.pid] = [row.title.to_s[0, 60], stat[:minflt], stat[:cpu]] if stat
      end
      {processes: processes, **Processes.machine_cpu}
    end

    # The rows of Herd::Memory.tree(pid), plus any process of the server's
    # process group that left the tree: Puma fork_worker's workers 1-3 are
    # children of worker 0 and are reparented to init when a phased restart
    # stops it, while they go on serving.
    def self.rows(pid)
      rows = Herd::Memory.tree(pid).rows.map { |row| Row.new(row.pid, row.title, row.sample) }
      known = rows.map(&:pid)
      Processes.of(pid).each do |process|
        next if known.include?(process[:pid])

        rows << Row.new(process[:pid], process[:title], Herd::Memory.sample(process[:pid]))
      rescue Herd::Error
        next
      end
      rows
    end

    # Statistics over [from, to] (CLOCK_MONOTONIC): the time average
    # (trapezoids between samples), the peak and the last value.
    # @return [Hash] :average, :peak, :end, :start, :samples
    def self.summary(samples, from: nil, to: nil)
      chosen = samples.select { |s| (!from || s[:t] >= from) && (!to || s[:t] <= to) }
      return {samples: 0} if chosen.empty?

      area = chosen.each_cons(2).sum { |a, b| (a[:pss] + b[:pss]) / 2.0 * (b[:t] - a[:t]) }
      span = chosen.last[:t] - chosen.first[:t]
      average = span.positive? ? area / span : chosen.first[:pss]
      {average: average.round(1), peak: chosen.map { |s| s[:pss] }.max.round(1), start: chosen.first[:pss].round(1),
       end: chosen.last[:pss].round(1), samples: chosen.size, seconds: span.round(1)}
    end
  end
end
