# frozen_string_literal: true

require "minitest"
require "herd/clock"

module Herd
  # The tests' one polling loop: a condition checked again until it holds or
  # a deadline passes. For what no log line or pipe announces (a process
  # gone, a port bound, a file written).
  module Waiting
    module_function

    # Calls the block every `interval` seconds until it returns a truthy value.
    # @param what [String] what is awaited, for the failure message
    # @param timeout [Numeric] seconds
    # @param detail [#call, nil] more for the failure message (a log, a screen), read only on failure
    # @return [Object] the block's value
    # @raise [Minitest::Assertion] when it did not hold within `timeout`
    def wait_until(what, timeout: 20, interval: 0.02, detail: nil)
      value = poll(timeout: timeout, interval: interval) { yield }
      return value if value

      raise Minitest::Assertion, ["#{what}: not within #{timeout}s", detail&.call].compact.join("; ")
    end

    # Like {#wait_until}, but returns the block's last value when time runs
    # out: for a caller that reports what it found rather than fail.
    # @return [Object] the first truthy value, or the last one
    def poll(timeout: 20, interval: 0.02)
      deadline = Clock.now + timeout
      loop do
        value = yield
        return value if value || Clock.now > deadline

        sleep interval
      end
    end
  end
end
