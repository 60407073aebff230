# frozen_string_literal: true

module Herd
  module Memory
    # Renders a {Report} as an smem-like text table.
    # @api private
    class Table
      HEADERS = ["PID", "RSS", "PSS", "USS", "SHARED", "PRIV DIRTY", "SHARED%", "TITLE"].freeze
      # Title width when the terminal width is unknown (output to a pipe).
      TITLE_WIDTH = 60
      # Never squeeze titles below this, even on a narrow terminal.
      MIN_TITLE_WIDTH = 16
      GAP = "  "
      UNITS = %w[MiB GiB TiB PiB].freeze

      class << self
        # @param bytes [Integer, nil]
        # @return [String] e.g. "512 KiB", "12.3 MiB"; "-" for nil
        def humanize(bytes)
          return "-" if bytes.nil?
          return "#{bytes} B" if bytes < 1024
          return "#{(bytes / 1024.0).round} KiB" if bytes < 1024**2

          value = bytes / 1024.0**2
          unit = UNITS.first
          UNITS.drop(1).each do |bigger|
            break if value < 1024

            value /= 1024
            unit = bigger
          end
          format("%.1f %s", value, unit)
        end
      end

      # @param report [Report]
      # @param width [Integer, nil] terminal width; titles are cut to fit it
      def initialize(report, width: nil)
        @report = report
        @width = width
      end

      # @return [String] the table, ending with a newline
      def to_s
        numbers = [HEADERS[0...-1]] + @report.rows.map { |row| number_cells(row.sample, row.pid.to_s) } + [total_cells]
        widths = numbers.transpose.map { |column| column.map(&:length).max }
        titles = [HEADERS.last] + title_cells +
          ["#{@report.rows.size} #{(@report.rows.size == 1) ? "process" : "processes"}"]
        title_width = fit_title_width(widths)
        lines = numbers.zip(titles).map do |cells, title|
          (cells.zip(widths).map { |cell, w| cell.rjust(w) } + [truncate(title, title_width)]).join(GAP).rstrip
        end
        (lines + footer).join("\n") << "\n"
      end

      private

      def number_cells(sample, label)
        h = self.class.method(:humanize)
        [label, h.call(sample.rss), h.call(sample.pss), h.call(sample.uss), h.call(sample.shared),
          h.call(sample.private_dirty), format("%.1f%%", sample.shared_ratio * 100)]
      end

      # RSS, SHARED and their ratio count a shared page once per process, so
      # their sums mean nothing: they are blanked, not summed.
      def total_cells
        total = @report.total
        h = self.class.method(:humanize)
        ["TOTAL", "-", h.call(total.pss), h.call(total.uss), "-", h.call(total.private_dirty), "-"]
      end

      # Indents descendants under their parent, like `ps f`.
      def title_cells
        depth = {}
        @report.rows.map do |row|
          level = depth[row.pid] = depth.key?(row.ppid) ? depth[row.ppid] + 1 : 0
          clean = row.title.to_s.gsub(/[[:cntrl:]]/, "?")
          clean = "?" if clean.empty?
          level.zero? ? clean : "#{"   " * (level - 1)} \\_ #{clean}"
        end
      end

      def footer
        return [] unless @report.rows.size > 1

        total = @report.total
        ["",
          "Summed RSS would claim #{self.class.humanize(total.rss)}; PSS says #{self.class.humanize(total.pss)}.",
          "(RSS counts a shared page in full in every process that maps it; PSS splits it among them.)"]
      end

      def fit_title_width(widths)
        return TITLE_WIDTH unless @width

        used = widths.sum + GAP.length * widths.size
        [@width - used, MIN_TITLE_WIDTH].max
      end

      def truncate(title, max)
        (title.length <= max) ? title : "#{title[0, max - 3]}..."
      end
    end
  end
end
