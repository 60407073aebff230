# frozen_string_literal: true

module Herd
  class CLI
    # What the commands that draw tables need to know about their output.
    # @api private
    module Terminal
      module_function

      # @param out [IO]
      # @return [Integer, nil] the terminal's columns; nil for a pipe or a file
      def width(out)
        return nil unless out.tty?

        require "io/console"
        columns = out.winsize[1]
        columns.positive? ? columns : nil
      rescue NotImplementedError, SystemCallError
        nil
      end
    end
  end
end
