# frozen_string_literal: true

# Each command requires what it needs: `herd serve`'s monitor stays small.
require_relative "version"
require_relative "errors"

module Herd
  # `herd COMMAND [args]`: dispatches to one class per command under herd/cli/.
  #
  # Errors are one line on stderr, exit 1 (usage errors exit 2); `--debug`
  # anywhere on the line adds the backtrace.
  # @api private
  class CLI
    COMMANDS = {
      "serve" => ["herd/cli/serve", "Serve", "run a Rack app: monitor, mold and workers (herd serve config.ru)"],
      "sidekiq" => ["herd/cli/sidekiq", "Sidekiq",
        "run Sidekiq processes forked from one mold, reforked (herd sidekiq -w 4 -- -q default)"],
      "solid_queue" => ["herd/cli/solid_queue", "SolidQueue",
        "run config/queue.yml's Solid Queue processes forked from one mold, reforked"],
      "refork" => ["herd/cli/refork", "Refork", "ask a running server to refork now (herd refork MONITOR_PID)"],
      "mem" => ["herd/cli/mem", "Mem", "memory of a process or process tree (PSS, USS, shared)"],
      "plot" => ["herd/cli/plot", "Plot",
        "draw herd mem --record files: Σ PSS over time, new generations marked (SVG)"],
      "top" => ["herd/cli/top", "Top", "live view of a running server: processes, memory, reforks (herd top ADDRESS)"],
      "demo" => ["herd/cli/demo", "Demo", "show copy-on-write sharing: plain fork vs herd's fork"]
    }.freeze

    def initialize(out: $stdout, err: $stderr)
      @out = out
      @err = err
    end

    # @param argv [Array<String>]
    # @return [Integer] the exit status
    def run(argv)
      argv = argv.dup
      debug = !argv.delete("--debug").nil?
      name = argv.shift
      case name
      when nil, "help", "-h", "--help" then help
      when "version", "-v", "--version" then @out.puts("herd #{VERSION}") || 0
      else
        options = %w[serve sidekiq solid_queue].include?(name) ? {debug: debug} : {}
        command(name).new(out: @out, err: @err, **options).run(argv)
      end
    rescue UsageError => e
      fail_with(e, debug, 2, hint: "see `herd help`")
    rescue Error, Interrupt, SystemCallError => e
      fail_with(e, debug, 1)
    end

    private

    def command(name)
      path, const, = COMMANDS.fetch(name) { raise UsageError, "unknown command #{name.inspect}" }
      require_relative(path.delete_prefix("herd/"))
      CLI.const_get(const)
    end

    def help
      @out.puts "Usage: herd COMMAND [options]   (herd COMMAND --help for a command's options)", ""
      COMMANDS.each { |name, (_, _, summary)| @out.puts format("  %-8s %s", name, summary) }
      @out.puts "", "Add --debug to any command for a backtrace on errors."
      0
    end

    def fail_with(error, debug, status, hint: nil)
      message = error.is_a?(Interrupt) ? "interrupted" : error.message
      @err.puts(["herd: #{message}", hint].compact.join(" (") + (hint ? ")" : ""))
      @err.puts(error.full_message(highlight: false)) if debug
      status
    end
  end
end
