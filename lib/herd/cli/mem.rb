# frozen_string_literal: true

require_relative "command"
require_relative "../memory"
require_relative "mem_recorder"

require_relative "terminal"

module Herd
  class CLI
    # `herd mem PID [--tree] [--json] [--watch SECONDS] [--count N] [--record FILE]`
    class Mem < Command
      BANNER = "Usage: herd mem PID [--tree] [--json] [--watch SECONDS] [--count N] [--record FILE]"
      # Moves the cursor home and clears the screen, so a watched table
      # updates in place on a terminal.
      CLEAR = "\e[H\e[2J"

      # @param out [IO]
      # @param err [IO]
      # @param memory [#report] the measuring backend; tests may pass a stand-in
      def initialize(memory: Herd::Memory, **streams)
        super(**streams)
        @memory = memory
      end

      private

      # @raise [NoSuchProcess, MemoryReadError] when the process cannot be read
      def call(options)
        options[:watch] ? watch(options) : show(options)
        0
      end

      def parse(argv)
        options = {}
        rest = parse_options(argv, options, name: "mem") do |opts|
          opts.separator ""
          opts.separator "Memory of a process (PSS, USS, what is still shared) from /proc/PID/smaps_rollup."
          opts.separator ""
          opts.on("-t", "--tree",
            "include every descendant (but herd mem itself), and a total") { options[:tree] = true }
          opts.on("-j", "--json",
            "print JSON (sizes in bytes); one document per line with --watch") { options[:json] = true }
          opts.on("-w", "--watch SECONDS", Float, "reprint every SECONDS until interrupted") { |s| options[:watch] = s }
          opts.on("--count N", Integer, "with --watch: stop after N reports") { |n| options[:count] = n }
          opts.on("-r", "--record FILE",
            "with --watch: also append each report to FILE, one JSON line each (herd plot FILE)") do |file|
            options[:record] = file
          end
        end
        return options if options[:help]

        options[:pid] = parse_pid(rest)
        validate(options)
        options
      end

      def parse_pid(rest)
        raise UsageError, "mem: missing PID; usage: #{BANNER.delete_prefix("Usage: ")}" if rest.empty?
        raise UsageError, "mem: one PID only, got #{rest.join(" ")}" if rest.size > 1
        unless rest.first.match?(/\A[1-9]\d*\z/)
          raise UsageError, "mem: PID must be a positive integer, got #{rest.first.inspect}"
        end

        Integer(rest.first, 10)
      end

      def validate(options)
        if options.key?(:watch) && !(options[:watch].finite? && options[:watch].positive?)
          raise UsageError, "mem: --watch needs a positive number of seconds"
        end
        if options[:record] && !options[:watch]
          raise UsageError, "mem: --record needs --watch, e.g. herd mem PID --tree --watch 1 --record run.jsonl"
        end
        if options.key?(:count)
          raise UsageError, "mem: --count needs --watch" unless options.key?(:watch)
          raise UsageError, "mem: --count must be at least 1" unless options[:count].positive?
        end
      end

      def show(options)
        @out.puts render(measure(options), options)
      end

      # Ctrl-C is how a watch normally ends, so it is a success, not an error.
      def watch(options)
        clear = !options[:json] && @out.tty?
        shown = 0
        recorder = options[:record] && Recorder.open(options[:record], options[:pid])
        loop do
          report = measure(options)
          recorder&.write(report)
          @out.print CLEAR if clear
          @out.puts watch_header(options, report) unless options[:json]
          @out.puts render(report, options)
          @out.flush
          shown += 1
          break if options[:count] && shown >= options[:count]

          @out.puts unless options[:json] || clear
          sleep options[:watch]
        end
      rescue Interrupt
        nil
      ensure
        recorder&.close
      end

      # With --tree, herd mem leaves itself (and anything it started) out:
      # run from a shell inside the tree it measures, it would otherwise count
      # its own Ruby as the application's (docs/MEMORY.md, "When `herd mem`
      # is inside the tree it measures").
      def measure(options)
        return @memory.report(options[:pid]) unless options[:tree]

        @memory.report(options[:pid], tree: true, leave_out: [Process.pid])
      end

      def render(report, options)
        return report.to_json if options[:json]

        table = report.to_table(width: Terminal.width(@out))
        note = left_out_note(report)
        note ? "#{table}\n#{note}" : table
      end

      def left_out_note(report)
        left_out = report.left_out
        return nil unless left_out.include?(Process.pid)

        others = left_out.size - 1
        started = (others == 1) ? "1 process it started" : "#{others} processes it started"
        if others > 0
          "(herd mem, pid #{Process.pid}, and #{started}, left out)"
        else
          "(herd mem, pid #{Process.pid}, left out)"
        end
      end

      def watch_header(options, report)
        "herd mem #{options[:pid]}#{" --tree" if options[:tree]}, every #{options[:watch]}s, " \
          "#{report.time.strftime("%H:%M:%S")}"
      end
    end
  end
end
