# frozen_string_literal: true

require_relative "../memory/table"

module Herd
  module Plot
    # Draws recordings as SVG, with no script: per recording, one panel of
    # Σ PSS over time stacked by role or generation, a line for the total,
    # and a dashed line where a new generation came (refork or reload).
    # Several recordings share their axes, one panel under the other, so
    # that servers side by side compare at a glance.
    # @api private
    class SVG
      WIDTH = 960
      PANEL_HEIGHT = 280
      MARGIN = {left: 72, right: 190, top: 56, bottom: 44}.freeze
      GAP = 64
      # Fixed colours per role (a colour means the same thing in every plot);
      # generations cycle through the palette.
      ROLE_COLOURS = {"monitor" => "#4e79a7", "mold" => "#f28e2b", "worker" => "#59a14f", "other" => "#bab0ac"}.freeze
      PALETTE = %w[#59a14f #edc948 #b07aa1 #ff9da7 #9c755f #76b7b2 #e15759 #f28e2b].freeze
      MIB = 1024.0 * 1024

      # @param recordings [Array<Recording>]
      # @param title [String]
      def initialize(recordings, title: "Σ PSS over time")
        @recordings = recordings
        @title = title
        @seconds = [recordings.map(&:duration).max, 1.0].max
        @mib = nice_ceiling(recordings.map(&:max_total).max / MIB * 1.05)
      end

      # @return [String] an SVG document
      def to_s
        height = MARGIN[:top] + @recordings.size * (PANEL_HEIGHT + GAP) - GAP + MARGIN[:bottom]
        body = @recordings.each_with_index.map do |recording, index|
          panel(recording, MARGIN[:top] + index * (PANEL_HEIGHT + GAP))
        end
        <<~SVG
          <?xml version="1.0" encoding="UTF-8"?>
          <svg xmlns="http://www.w3.org/2000/svg" width="#{WIDTH}" height="#{height}" viewBox="0 0 #{WIDTH} #{height}" font-family="sans-serif" font-size="12">
          <title>#{escape(@title)}</title>
          <desc>#{escape(description)}</desc>
          <rect width="#{WIDTH}" height="#{height}" fill="#ffffff"/>
          <text x="#{MARGIN[:left]}" y="24" font-size="16" font-weight="bold">#{escape(@title)}</text>
          #{body.join("\n")}
          </svg>
        SVG
      end

      # @return [String] the SVG in a page of its own (no script either)
      def to_html
        <<~HTML
          <!DOCTYPE html>
          <html><head><meta charset="utf-8"><title>#{escape(@title)}</title></head>
          <body style="margin:0;background:#fff">
          #{to_s.sub(/\A<\?xml[^>]*>\n/, "")}</body></html>
        HTML
      end

      private

      def description
        @recordings.map do |recording|
          "#{recording.name}: #{recording.points.size} samples over #{recording.duration.round(1)} s, mean Σ PSS " \
            "#{mib(recording.mean_total)}, max #{mib(recording.max_total)}, #{recording.markers.size} new generation(s)"
        end.join("; ")
      end

      def panel(recording, top)
        x = ->(seconds) { MARGIN[:left] + seconds / @seconds * plot_width }
        y = ->(bytes) { top + PANEL_HEIGHT - bytes / MIB / @mib * PANEL_HEIGHT }
        [
          %(<g class="panel" data-name="#{escape(recording.name)}">),
          %(<text x="#{MARGIN[:left]}" y="#{top - 10}" font-weight="bold">#{escape(recording.name)}) +
            %(<tspan font-weight="normal"> — mean Σ PSS #{mib(recording.mean_total)}, max #{mib(recording.max_total)}</tspan></text>),
          grid(top, x, y),
          areas(recording, x, y),
          total_line(recording, x, y),
          markers(recording, top, x),
          legend(recording, top),
          "</g>"
        ].join("\n")
      end

      def plot_width
        WIDTH - MARGIN[:left] - MARGIN[:right]
      end

      def grid(top, x, y)
        lines = ticks(@mib).map do |value|
          py = fmt(y.call(value * MIB))
          %(<line x1="#{MARGIN[:left]}" y1="#{py}" x2="#{MARGIN[:left] + plot_width}" y2="#{py}" stroke="#e0e0e0"/>) +
            %(<text x="#{MARGIN[:left] - 6}" y="#{py}" text-anchor="end" dominant-baseline="middle">#{label(value)} MiB</text>)
        end
        lines += ticks(@seconds).map do |value|
          px = fmt(x.call(value))
          %(<text x="#{px}" y="#{top + PANEL_HEIGHT + 16}" text-anchor="middle">#{label(value)} s</text>)
        end
        lines << %(<rect x="#{MARGIN[:left]}" y="#{top}" width="#{plot_width}" height="#{PANEL_HEIGHT}" fill="none" stroke="#888888"/>)
        lines.join("\n")
      end

      # One polygon per key: its band between the keys below it and itself.
      def areas(recording, x, y)
        below = Array.new(recording.points.size, 0)
        recording.keys.each_with_index.map do |key, index|
          above = recording.points.each_with_index.map { |point, i| below[i] + point.by.fetch(key, 0) }
          upper = recording.points.each_with_index.map { |point, i|
            "#{fmt(x.call(point.seconds))},#{fmt(y.call(above[i]))}"
          }
          lower = recording.points.each_with_index.map { |point, i|
            "#{fmt(x.call(point.seconds))},#{fmt(y.call(below[i]))}"
          }.reverse
          below = above
          %(<polygon class="area" data-key="#{escape(key)}" points="#{(upper + lower).join(" ")}" fill="#{colour(key, index)}" stroke="none"/>)
        end.join("\n")
      end

      def total_line(recording, x, y)
        points = recording.points.map { |point| "#{fmt(x.call(point.seconds))},#{fmt(y.call(point.total))}" }
        %(<polyline class="total" points="#{points.join(" ")}" fill="none" stroke="#222222" stroke-width="1.5"/>)
      end

      def markers(recording, top, x)
        recording.markers.map do |marker|
          px = fmt(x.call(marker.seconds))
          %(<line class="marker" x1="#{px}" y1="#{top}" x2="#{px}" y2="#{top + PANEL_HEIGHT}" stroke="#d62728" stroke-width="2" stroke-dasharray="4 3"/>) +
            %(<text x="#{px}" y="#{top + 4}" transform="rotate(90 #{px} #{top + 4})" dx="2" dy="-3" fill="#d62728" font-size="10">#{escape(marker.label[0, 48])}</text>)
        end.join("\n")
      end

      def legend(recording, top)
        left = MARGIN[:left] + plot_width + 14
        items = recording.keys.each_with_index.map do |key, index|
          ly = top + 8 + (recording.keys.size - 1 - index) * 18 # top of the legend = top of the stack
          %(<rect x="#{left}" y="#{ly}" width="12" height="12" fill="#{colour(key, index)}"/>) +
            %(<text x="#{left + 18}" y="#{ly + 10}">#{escape(key)}</text>)
        end
        ty = top + 14 + recording.keys.size * 18
        items << %(<line x1="#{left}" y1="#{ty}" x2="#{left + 12}" y2="#{ty}" stroke="#222222" stroke-width="1.5"/>) +
          %(<text x="#{left + 18}" y="#{ty + 4}">Σ PSS</text>)
        unless recording.markers.empty?
          items << %(<line x1="#{left + 6}" y1="#{ty + 12}" x2="#{left + 6}" y2="#{ty + 26}" stroke="#d62728" stroke-dasharray="4 3"/>) +
            %(<text x="#{left + 18}" y="#{ty + 23}">new generation</text>)
        end
        items.join("\n")
      end

      def colour(key, index)
        ROLE_COLOURS[key] || ((key == "monitor") ? ROLE_COLOURS["monitor"] : PALETTE[index % PALETTE.size])
      end

      # 1, 2 or 5 times a power of ten, at least `value`.
      def nice_ceiling(value)
        return 1.0 if value <= 0

        power = 10**Math.log10(value).floor
        [1, 2, 5, 10].map { |step| step * power }.find { |candidate| candidate >= value }.to_f
      end

      def ticks(max)
        step = nice_ceiling(max / 5.0)
        (0..(max / step).floor).map { |n| n * step }
      end

      def label(value)
        (value == value.round) ? value.round.to_s : format("%g", value)
      end

      def mib(bytes)
        Memory::Table.humanize(bytes.round)
      end

      def fmt(number)
        format("%.1f", number)
      end

      def escape(text)
        text.to_s.gsub("&", "&amp;").gsub("<", "&lt;").gsub(">", "&gt;").gsub("\"", "&quot;")
      end
    end
  end
end
