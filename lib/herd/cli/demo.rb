# frozen_string_literal: true

require_relative "command"

module Herd
  class CLI
    # `herd demo` (the server, reforking, measured) or `herd demo fork`
    # (plain fork vs herd's fork, measured): hands the arguments to one or
    # the other.
    class Demo < Command
      # @return [Integer] exit status
      def run(argv)
        if argv.first == "fork"
          require_relative "demo_fork"
          DemoFork.new(out: @out, err: @err).run(argv.drop(1))
        else
          require_relative "demo_server"
          DemoServer.new(out: @out, err: @err).run(argv)
        end
      end
    end
  end
end
