# frozen_string_literal: true

module Herd
  module Cluster
    # Whether YJIT, in this worker, has stopped compiling. Until it has, each
    # method it has not compiled keeps a call counter that every call writes:
    # a mold promoted from a worker still compiling hands those counters to
    # every worker of the next generation, and each copies the pages that
    # hold them (docs/COPY_ON_WRITE.md, "Ruby 3.4 with YJIT: a counter in every
    # method not compiled"). So a refork
    # on schedule waits for a worker whose YJIT is settled (Rollout).
    # @api private
    class JITWatch
      # Requests between two looks at YJIT's count of compiled methods.
      SAMPLE_EVERY = 16
      # Requests without a newly compiled method after which YJIT is settled.
      QUIET = 64

      # @return [JITWatch, nil] nil where YJIT is not on
      def self.start
        new if defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?
      end

      def initialize
        @compiled = compiled_count
        @quiet_since = 0
        @settled = false
      end

      # @return [Boolean]
      attr_reader :settled

      # After each request.
      # @param requests [Integer] served so far
      # @return [Boolean, nil] the new state when it changed, nil otherwise
      def after_request(requests)
        return unless (requests % SAMPLE_EVERY).zero?

        compiled = compiled_count
        @quiet_since = requests if compiled != @compiled
        @compiled = compiled
        settled = requests - @quiet_since >= QUIET
        return if settled == @settled

        @settled = settled
      end

      private

      # Ruby >= 3.4 reads one statistic; 3.3 builds them all.
      def compiled_count
        RubyVM::YJIT.runtime_stats(:compiled_iseq_count)
      rescue ArgumentError
        RubyVM::YJIT.runtime_stats[:compiled_iseq_count]
      end
    end
  end
end
