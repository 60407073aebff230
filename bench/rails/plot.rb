# frozen_string_literal: true

require "herd/plot"

module RailsBench
  # The runs' per-process samples drawn with herd plot: one panel per server
  # (its first run), stacked by role, new generations marked, same axes.
  # @return [String, nil] the SVG's path, nil when no run has a recording
  def self.plot(runs, name)
    firsts = runs.reject { |run| run[:error] || !run[:recording] }.group_by { |run| run[:server] }.map { |_, mine| mine.min_by { |r| r[:round] } }
    return nil if firsts.empty?

    recordings = firsts.map do |run|
      reports = run[:recording].map do |seconds, rows|
        {"time" => Time.at(1_000_000_000 + seconds).utc.strftime("%Y-%m-%dT%H:%M:%S.%LZ"),
         "processes" => rows.map { |title, pss| {"title" => title, "pss" => (pss * MIB).round} }}
      end
      Herd::Plot::Recording.new(reports, by: :role, name: run[:server])
    end
    path = File.join(Bench::Report::RESULTS, "#{name}.svg")
    File.write(path, Herd::Plot::SVG.new(recordings, title: "bench/rails: Σ PSS over time, by role (herd plot)").to_s)
    path
  end
end
