# frozen_string_literal: true

require_relative "command"
require_relative "control_client"
require_relative "top_screen"

require_relative "terminal"

module Herd
  class CLI
    # `herd top ADDRESS` or `herd top --pidfile FILE`: a running server's
    # processes, memory and reforks, from its control endpoint, refreshed
    # every second on a terminal (q quits); one snapshot on a dumb terminal
    # or a pipe.
    class Top < Command
      BANNER = "Usage: herd top ADDRESS | herd top --pidfile FILE [--interval SECONDS] [--once]"
      # The alternate screen, home and clear, cursor hidden; and back.
      ENTER = "\e[?1049h\e[?25l"
      LEAVE = "\e[?25h\e[?1049l"
      HOME = "\e[H\e[2J"

      # @param input [IO] where q comes from
      def initialize(input: $stdin, env: ENV, **streams)
        super(**streams)
        @input = input
        @env = env
      end

      private

      def call(options)
        address = options[:pidfile] ? ControlClient.address_from_pidfile(options[:pidfile]) : options[:address]
        client = ControlClient.new(address)
        (live? && !options[:once]) ? live(client, address, options[:interval]) : @out.print(screen(client, address))
        0
      end

      def parse(argv)
        options = {interval: 1.0}
        rest = parse_options(argv, options, name: "top") do |opts|
          opts.separator ""
          opts.separator "ADDRESS is the server's control_listen: unix:/path/herd.sock or host:port."
          opts.separator ""
          opts.on("-p", "--pidfile FILE",
            "the server's pidfile: find its control endpoint from its monitor") { |f| options[:pidfile] = f }
          opts.on("-i", "--interval SECONDS", Float, "refresh every SECONDS (default 1)") { |s| options[:interval] = s }
          opts.on("--once",
            "print one snapshot and exit (the default on a pipe or a dumb terminal)") { options[:once] = true }
        end
        return options if options[:help]

        validate(options, rest)
      end

      def validate(options, rest)
        raise UsageError, "top: --interval must be > 0" unless options[:interval].positive?
        raise UsageError, "top: give ADDRESS or --pidfile FILE, not both" if options[:pidfile] && !rest.empty?
        if !options[:pidfile] && rest.empty?
          raise UsageError, "top: missing ADDRESS or --pidfile FILE; #{BANNER.delete_prefix("Usage: ")}"
        end
        raise UsageError, "top: one ADDRESS only, got #{rest.join(" ")}" if rest.size > 1

        options.merge(address: rest.first)
      end

      # A terminal that can redraw in place, and a keyboard to read q from.
      def live?
        @out.tty? && @input.tty? && !["", "dumb"].include?(@env.fetch("TERM", ""))
      end

      def screen(client, address)
        TopScreen.new(client.stats, width: Terminal.width(@out), address: address).to_s
      end

      def live(client, address, interval)
        require "io/console"
        @out.print ENTER
        @input.raw do
          loop do
            # \r\n: raw mode turns off the terminal's own newline translation.
            @out.print HOME, screen(client, address).gsub("\n", "\r\n"), "\r\nq quits"
            @out.flush
            break if quit?(interval)
          end
        end
      ensure
        @out.print LEAVE if @out.tty?
      end

      # Waits up to `interval` seconds for a key; q, Q, Ctrl-C or Ctrl-D quit.
      def quit?(interval)
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + interval
        loop do
          left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          return false if left <= 0 || !@input.wait_readable(left)

          key = @input.read_nonblock(16, exception: false)
          return true if key.nil? || (key.is_a?(String) && key.match?(/[qQ\x03\x04]/))
        end
      end
    end
  end
end
