# frozen_string_literal: true

require "etc"
require "fileutils"
require "json"
require "time"
require_relative "stats"

module Bench
  # What every benchmark writes: an environment header, a markdown
  # table for people and JSON for tools, both under bench/results/.
  module Report
    ROOT = File.expand_path("../..", __dir__)
    RESULTS = File.join(ROOT, "bench", "results")

    module_function

    # @return [String] the 1, 5 and 15 minute load averages
    def loadavg
      File.read("/proc/loadavg").split.first(3).join(" ")
    rescue SystemCallError
      "unknown"
    end

    # Where and how the numbers were taken.
    # @param command [String] the command line that produced them
    # @return [Hash]
    def environment(command)
      {
        date: Time.now.utc.iso8601,
        ruby: RUBY_DESCRIPTION, # what `ruby -v` prints
        kernel: Etc.uname[:release], # `uname -r`
        cores: Etc.nprocessors, # `nproc`: the CPUs this process may run on
        herd: git_revision,
        command: command
      }
    end

    # The command line as typed, assuming `bundle exec` when Bundler set us up.
    # @return [String]
    def command_line(script, args)
      prefix = ENV["BUNDLE_GEMFILE"] ? "bundle exec " : ""
      "#{prefix}ruby #{relative(script)} #{args.join(" ")}".strip
    end

    # @param headers [Array<String>]
    # @param rows [Array<Array>] cells, converted with #to_s
    # @return [String]
    def markdown_table(headers, rows)
      lines = [headers, headers.map { "---" }] + rows
      lines.map { |cells| "| #{cells.map { |cell| cell.to_s.tr("|", "/") }.join(" | ")} |" }.join("\n") + "\n"
    end

    # @return [String] the environment as a markdown list
    def environment_markdown(env)
      <<~MD
        - date: #{env[:date]}
        - ruby -v: `#{env[:ruby]}`
        - uname -r: `#{env[:kernel]}`
        - nproc: #{env[:cores]}
        - herd: #{env[:herd]}
        - command: `#{env[:command]}`
      MD
    end

    # Writes bench/results/NAME.md and NAME.json.
    # @param name [String] e.g. "nakayoshi"
    # @param markdown [String] the whole document
    # @param data [Hash] everything measured, including the environment
    # @param line_depth [Integer, nil] see #json
    # @return [Array<String>] the paths written
    def write(name, markdown:, data:, line_depth: nil)
      FileUtils.mkdir_p(RESULTS)
      md = File.join(RESULTS, "#{name}.md")
      json = File.join(RESULTS, "#{name}.json")
      File.write(md, markdown)
      File.write(json, json(data, line_depth: line_depth) + "\n")
      [md, json].map { |path| relative(path) }
    end

    # JSON.pretty_generate, except that with `line_depth` an array that
    # holds no object and nests at most that deep takes one line: a
    # recording's samples ([seconds, [[title, PSS], ...]]: depth 3) one a line.
    # @return [String]
    def json(data, line_depth: nil, indent: "")
      return JSON.pretty_generate(data) unless line_depth

      inner = "#{indent}  "
      case data
      when Hash
        return "{}" if data.empty?

        items = data.map { |key, value| "#{inner}#{JSON.generate(key.to_s)}: #{json(value, line_depth: line_depth, indent: inner)}" }
        "{\n#{items.join(",\n")}\n#{indent}}"
      when Array
        return JSON.generate(data) if data.empty? || flat?(data, line_depth)

        "[\n#{data.map { |value| inner + json(value, line_depth: line_depth, indent: inner) }.join(",\n")}\n#{indent}]"
      else
        JSON.generate(data)
      end
    end

    # @return [Boolean] whether `array` holds no Hash and nests at most `depth` deep
    def flat?(array, depth)
      return false if depth < 1

      array.all? { |value| value.is_a?(Array) ? flat?(value, depth - 1) : !value.is_a?(Hash) }
    end

    # YJIT as the booted app had it, and how it came on: with each process
    # (RUBY_YJIT_ENABLE=1 or --yjit, so the boot compiled too) or at the end
    # of the boot, where Rails' `config.yjit` turns it on.
    # @param yjit [Boolean, nil] on in the booted app; nil: not recorded
    # @param from_start [Object] truthy when the driver ran with YJIT on
    # @return [String]
    def yjit_text(yjit, from_start)
      case yjit
      when nil then "not recorded"
      when false then "off (checked in the app booted with the servers' environment)"
      else
        how = from_start ? "from the start of each process: RUBY_YJIT_ENABLE=1, as the driver ran" :
          "at the end of boot: Rails' `config.yjit`, no RUBY_YJIT_ENABLE"
        "on (checked in the app booted with the servers' environment; #{how})"
      end
    end

    # A driver's NOTES.md reads the run that its default results file
    # holds: a run under another name gets none.
    # @return [String] "" or a blank line and the notes
    def notes(path, name:, default:)
      (name == default && File.exist?(path)) ? "\n#{File.read(path)}" : ""
    end

    # A driver's last step: its markdown plus its notes ({notes}) printed and
    # written with the runs' JSON.
    # @return [Array<String>] the paths written
    def publish(name, markdown:, notes:, environment:, options:, runs:)
      markdown += notes
      puts markdown
      write(name, markdown: markdown, data: {environment: environment, options: options, runs: runs}).tap do |paths|
        warn "wrote #{paths.join(", ")}"
      end
    end

    def relative(path)
      File.expand_path(path).delete_prefix("#{ROOT}/")
    end

    def git_revision
      Dir.chdir(ROOT) do
        rev = IO.popen(%w[git rev-parse --short HEAD], err: File::NULL, &:read).strip
        return "unknown (no git)" if rev.empty?

        dirty = !IO.popen(%w[git status --porcelain --untracked-files=no], err: File::NULL, &:read).strip.empty?
        dirty ? "#{rev} + uncommitted changes" : rev
      end
    rescue SystemCallError
      "unknown (no git)"
    end
  end
end
