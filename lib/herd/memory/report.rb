# frozen_string_literal: true

require_relative "sample"
require_relative "table"

module Herd
  module Memory
    # The memory of one process or of a process tree at one moment.
    class Report
      # One process. `title` is what ps shows (set by Process.setproctitle).
      Row = Struct.new(:pid, :ppid, :title, :sample, keyword_init: true)

      # @return [Array<Row>] root first, then descendants depth-first
      attr_reader :rows
      # @return [Sample] field-wise sum over rows. Its pss, uss and
      #   private_dirty are true totals; its rss and shared count every shared
      #   page once per process that maps it, so they overstate.
      attr_reader :total
      # @return [Time] when the report was taken
      attr_reader :time
      # @return [Array<Integer>] pids that were in the tree but left out on
      #   request (herd mem itself), neither in rows nor in the total
      attr_reader :left_out

      # @param rows [Array<Row>]
      # @param tree [Boolean] whether the rows are a process tree
      # @param time [Time]
      # @param left_out [Array<Integer>] see {#left_out}
      def initialize(rows, tree: false, time: Time.now, left_out: [])
        @rows = rows.dup.freeze
        @tree = tree
        @time = time
        @left_out = left_out.dup.freeze
        @total = @rows.map(&:sample).reduce(Sample.zero, :+)
      end

      # @return [Boolean]
      def tree?
        @tree
      end

      # Every size in bytes.
      # @return [Hash]
      def to_h
        {
          time: time.utc.strftime("%Y-%m-%dT%H:%M:%S.%LZ"),
          tree: tree?,
          processes: rows.map { |row| {pid: row.pid, ppid: row.ppid, title: row.title, **sample_hash(row.sample)} },
          total: {processes: rows.size, **sample_hash(total)},
          left_out: left_out
        }
      end

      # One JSON document, no newlines (watch mode prints one per line).
      # @return [String]
      def to_json(*args)
        require "json" # here, not at load: the server's monitor reads memory but never loads json
        to_h.to_json(*args)
      end

      # An aligned text table with a TOTAL line.
      # @param width [Integer, nil] terminal width to fit titles into
      # @return [String]
      def to_table(width: nil)
        Table.new(self, width: width).to_s
      end

      private

      def sample_hash(sample)
        sample.to_h.merge(uss: sample.uss, shared: sample.shared, shared_ratio: sample.shared_ratio.round(4))
      end
    end
  end
end
