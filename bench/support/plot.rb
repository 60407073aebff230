# frozen_string_literal: true

require "time"
require "herd/plot"
require_relative "report"
require_relative "sampler"

module Bench
  # Runs' per-process samples drawn with herd plot (lib/herd/plot): one panel
  # per server (its first run), stacked by role, new generations marked,
  # every panel on the same axes. A run's recording is what Bench::Sampler
  # took with titles: [[seconds, [[title, PSS MiB], ...]], ...]; a run may
  # also say when its server rolled to a new generation ([[seconds,
  # generation, why], ...] under :rollouts), for servers whose process
  # titles do not show it.
  module Plot
    EPOCH = 1_000_000_000 # any instant: herd plot reads times, the recording holds seconds

    module_function

    # Writes bench/results/NAME.svg.
    # @param runs [Array<Hash>] runs with :recording; failed runs and runs without one are left out
    # @param name [String] the file's name under bench/results, without .svg
    # @param title [String] the picture's title
    # @param key [Symbol] what names a panel: one panel per value (the run with the lowest `order`)
    # @param order [Symbol] the repetition's number (:round, :rep)
    # @param label [Proc, nil] run -> the panel's name (default: its key)
    # @return [String, nil] the SVG's path, nil when no run has a recording
    def write(runs, name, title:, key: :server, order: :round, label: nil)
      firsts = runs.reject { |run| run[:error] || !run[:recording] }.group_by { |run| run[key] }
        .map { |_, mine| mine.min_by { |run| run[order] } }
      return nil if firsts.empty?

      recordings = firsts.map { |run| recording(run, name: label ? label.call(run) : run[key].to_s) }
      FileUtils.mkdir_p(Report::RESULTS)
      path = File.join(Report::RESULTS, "#{name}.svg")
      File.write(path, Herd::Plot::SVG.new(recordings, title: title).to_s)
      path
    end

    # @return [Herd::Plot::Recording] the run's recording as herd mem --record reports
    def recording(run, name:)
      rollouts = (run[:rollouts] || []).map do |seconds, generation, why|
        {"at" => at(seconds), "generation" => generation, "kind" => "refork", "reason" => why}
      end
      reports = run[:recording].map do |seconds, rows|
        {"time" => at(seconds), "processes" => rows.map { |title, pss| {"title" => title, "pss" => (pss * MIB).round} }}
      end
      reports.first["rollouts"] = rollouts unless rollouts.empty?
      Herd::Plot::Recording.new(reports, by: :role, name: name)
    end

    def at(seconds)
      Time.at(EPOCH + seconds).utc.strftime("%Y-%m-%dT%H:%M:%S.%LZ")
    end
  end
end
