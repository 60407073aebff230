# frozen_string_literal: true

require "optparse"

module Herd
  class CLI
    # What every `herd COMMAND` but serve shares: the streams it writes to, a
    # run that stops after --help, and option parsing whose errors are
    # one-line usage errors naming the command.
    # @api private
    class Command
      def initialize(out: $stdout, err: $stderr)
        @out = out
        @err = err
      end

      # @param argv [Array<String>]
      # @return [Integer] exit status
      def run(argv)
        options = parse(argv)
        options[:help] ? 0 : call(options)
      end

      private

      # Parses argv with the command's BANNER, the options the block adds
      # and -h/--help (which prints the help and sets options[:help]).
      # @param name [String, nil] prefixed to parse errors ("plot: ...")
      # @param options [Hash] filled in by the block's handlers
      # @return [Array<String>] the arguments that are not options
      def parse_options(argv, options, name: nil)
        OptionParser.new do |opts|
          opts.banner = self.class::BANNER
          yield opts
          opts.on("-h", "--help", "show this help") do
            @out.puts opts
            options[:help] = true
          end
        end.parse(argv)
      rescue OptionParser::ParseError => e
        raise UsageError, [name, e.message].compact.join(": ")
      end
    end
  end
end
