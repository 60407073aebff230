# frozen_string_literal: true

require "minitest"
require "herd/clock"

module Herd
  # Searching a server's log, whatever carries it (PipedLog, FileLog). An
  # includer provides #lines (every line so far), #ended? (no line will
  # come) and #await(seen, seconds) (returns once there may be lines past
  # `seen`, or after `seconds`).
  module ServerLog
    # @return [Integer] how many lines so far (for wait_for(after:))
    def mark
      lines.size
    end

    # Blocks until a log line matches, searching the lines already there first.
    # @param after [Integer] ignore the first `after` lines (a {#mark})
    # @return [MatchData]
    # @raise [Minitest::Assertion] when the log ends or `timeout` passes first
    def wait_for(pattern, timeout:, after: 0)
      deadline = Clock.now + timeout
      loop do
        ended = ended? # before the lines: a line written before the end is searched
        seen = lines
        seen.drop(after).each do |line|
          match = line.match(pattern)
          return match if match
        end
        remaining = deadline - Clock.now
        if ended || remaining <= 0
          raise Minitest::Assertion, "no log line matched #{pattern.inspect} #{ended ? "before #{ending}" : "in #{timeout}s"}; log:\n#{seen.join}"
        end

        await(seen.size, remaining)
      end
    end

    private

    # @return [String] what ended the log, for failure messages
    def ending
      "the log ended"
    end
  end
end
