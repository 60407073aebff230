# frozen_string_literal: true

module Herd
  module Cluster
    # A pause that doubles with each failure in a row, up to a ceiling: a
    # crash loop must not become a fork bomb, and one failure must not keep
    # the server waiting long.
    # @api private
    class Backoff
      attr_reader :failures

      # @param base [Float] seconds after the first failure is base * 2
      # @param max [Float] the ceiling, in seconds
      def initialize(base:, max:)
        @base = base
        @max = max
        @failures = 0
      end

      # Counts a failure.
      # @return [Float] seconds to wait before the next attempt
      def failure!
        @failures += 1
        [@base * (2**[@failures, 16].min), @max].min
      end

      # A success: the next failure starts from the bottom again.
      def reset
        @failures = 0
      end
    end
  end
end
