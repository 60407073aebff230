# frozen_string_literal: true

require "json"
require "time"
require_relative "../errors"

module Herd
  module Plot
    # A recording of `herd mem PID --tree --watch S --record FILE`: one JSON
    # report per line (the `herd mem --json` document, plus the server's
    # last rollouts when its control endpoint was reachable), read back as
    # Σ PSS over time split by role or by generation, and the moments a new
    # generation came (refork or reload).
    # @api private
    class Recording
      # A process's role and generation, from the title ps shows. herd's own
      # titles first; then the peers' (Pitchfork, Unicorn, Puma), so that a
      # recording of one of them plots too.
      ROLES = [
        [/\Aherd monitor/, "monitor"],
        [/\Aherd mold/, "mold"],
        [/\Aherd worker/, "worker"],
        [/\bmold\b/i, "mold"],
        [/\bworker\b/i, "worker"],
        [/\b(master|monitor|cluster)\b/i, "monitor"]
      ].freeze
      GENERATION = /\(gen:? ?(\d+)\)|\bgen(?:eration)?[: =](\d+)/

      # One sample: seconds since the first, Σ PSS by key, the total.
      Point = Struct.new(:seconds, :by, :total, keyword_init: true)
      # A new generation: when, which, and why if the server said.
      Marker = Struct.new(:seconds, :generation, :label, keyword_init: true)

      # @return [String] what to call it in a legend or a title
      attr_reader :name
      # @return [Array<Point>]
      attr_reader :points
      # @return [Array<Marker>]
      attr_reader :markers
      # @return [Array<String>] every key, in stacking order
      attr_reader :keys

      # @param path [String] a .jsonl file
      # @param by [Symbol] :role or :generation
      # @raise [Herd::Error] when the file is missing or holds no report
      def self.load(path, by: :role)
        lines = File.readlines(path, chomp: true).reject(&:empty?)
        reports = lines.each_with_index.map do |line, index|
          JSON.parse(line)
        rescue JSON::ParserError => e
          raise Error, "#{path}:#{index + 1}: not a herd mem JSON report (#{e.message[0, 60]})"
        end
        if reports.empty?
          raise Error, "#{path} holds no report: record one with herd mem PID --tree --watch 1 --record #{path}"
        end

        new(reports, by: by, name: File.basename(path, ".*"))
      rescue Errno::ENOENT, Errno::EACCES => e
        raise Error, "cannot read #{path}: #{e.message}"
      end

      # @param reports [Array<Hash>] parsed JSON reports, oldest first
      def initialize(reports, by: :role, name: "run")
        @name = name
        @by = by
        start = time(reports.first)
        @points = reports.map { |report| point(report, time(report) - start) }
        @keys = order(@points.flat_map { |point| point.by.keys }.uniq)
        @markers = markers_from(reports, start)
      end

      # @param title [String]
      # @return [Array(String, Integer, nil)] role and generation
      def self.classify(title, root: false)
        role = ROLES.find { |pattern, _| title.match?(pattern) }&.last || (root ? "monitor" : "other")
        match = title.match(GENERATION)
        [role, match && Integer(match[1] || match[2], 10)]
      end

      # @return [Float] seconds from the first sample to the last
      def duration
        @points.last.seconds
      end

      # @return [Float] Σ PSS averaged over time (trapezoids), bytes
      def mean_total
        return @points.first.total.to_f if @points.size < 2

        area = @points.each_cons(2).sum { |a, b| (a.total + b.total) / 2.0 * (b.seconds - a.seconds) }
        (duration > 0) ? area / duration : @points.first.total.to_f
      end

      # @return [Integer] the largest Σ PSS, bytes
      def max_total
        @points.map(&:total).max
      end

      private

      def time(report)
        Time.iso8601(report.fetch("time"))
      rescue KeyError, ArgumentError
        raise Error, "a report without a valid \"time\": record with herd mem --record"
      end

      def point(report, seconds)
        by = Hash.new(0)
        report.fetch("processes").each_with_index do |process, index|
          role, generation = self.class.classify(process["title"].to_s, root: index.zero?)
          by[key(role, generation)] += process["pss"].to_i
        end
        Point.new(seconds: seconds, by: by, total: by.values.sum)
      end

      def key(role, generation)
        return role if @by == :role
        return "monitor" if role == "monitor"

        generation ? "gen #{generation}" : "other"
      end

      def order(keys)
        return keys.sort_by { |key| [%w[monitor mold worker other].index(key) || 9, key] } if @by == :role

        rank = ->(key) { {"monitor" => 0, "other" => 2}.fetch(key, 1) }
        keys.sort_by { |key| [rank.call(key), key[/\d+/].to_i] }
      end

      # What the server said about its rollouts when it could; otherwise
      # a generation first seen is marked "gen N".
      def markers_from(reports, start)
        told = reports.flat_map { |report| report["rollouts"] || [] }.uniq { |r| r["generation"] }
        return told.map { |r| told_marker(r, start) }.select { |m| m.seconds.between?(0, duration) } unless told.empty?

        seen = nil
        @points.zip(reports).each_with_object([]) do |(point, report), markers|
          generations = report["processes"].filter_map { |process| self.class.classify(process["title"].to_s)[1] }.uniq
          (generations - (seen || generations)).each do |generation|
            markers << Marker.new(seconds: point.seconds, generation: generation, label: "gen #{generation}")
          end
          seen = (seen || []) | generations
        end
      end

      def told_marker(rollout, start)
        Marker.new(seconds: Time.iso8601(rollout["at"]) - start, generation: rollout["generation"],
          label: "#{rollout["kind"]} #{rollout["generation"]}: #{rollout["reason"]}")
      end
    end
  end
end
