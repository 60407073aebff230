# frozen_string_literal: true

require_relative "command"
require_relative "../plot"

module Herd
  class CLI
    # `herd plot RUN.jsonl [MORE.jsonl...] -o run.svg`: Σ PSS over time from
    # `herd mem --record` files, stacked by role or generation, new
    # generations marked; SVG or a plain HTML page, no script.
    class Plot < Command
      BANNER = "Usage: herd plot RUN.jsonl [MORE.jsonl ...] -o OUT.svg|OUT.html [--by role|generation] [--title TEXT]"

      private

      def call(options)
        recordings = options[:files].map { |file| Herd::Plot::Recording.load(file, by: options[:by]) }
        svg = Herd::Plot::SVG.new(recordings, title: options[:title] || "Σ PSS over time, by #{options[:by]}")
        File.write(options[:output], options[:output].end_with?(".html") ? svg.to_html : svg.to_s)
        recordings.each do |recording|
          @out.puts format("%s: %d samples, %.1f s, mean Σ PSS %s, max %s, %d new generation(s)", recording.name,
            recording.points.size, recording.duration, Memory::Table.humanize(recording.mean_total.round),
            Memory::Table.humanize(recording.max_total), recording.markers.size)
        end
        @out.puts "wrote #{options[:output]}"
        0
      rescue SystemCallError => e
        raise Error, "plot: #{e.message}"
      end

      def parse(argv)
        options = {by: :role}
        files = parse_options(argv, options, name: "plot") do |opts|
          opts.on("-o", "--output FILE", "where to write: .svg or .html") { |file| options[:output] = file }
          opts.on("--by KEY", %w[role generation],
            "stack by role (default) or generation") { |key| options[:by] = key.to_sym }
          opts.on("--title TEXT", "the plot's title") { |text| options[:title] = text }
        end
        return options if options[:help]
        if files.empty?
          raise UsageError, "plot: missing RUN.jsonl (record one with herd mem PID --tree --watch 1 --record RUN.jsonl)"
        end
        raise UsageError, "plot: missing -o OUT.svg (or OUT.html)" unless options[:output]
        unless options[:output].match?(/\.(svg|html)\z/)
          raise UsageError, "plot: -o must end in .svg or .html, got #{options[:output]}"
        end

        options.merge(files: files)
      end
    end
  end
end
