# frozen_string_literal: true

module Herd
  # Old names keep working until 1.0; each says once per process, in one
  # line, what to write instead (docs/API.md, "Deprecated names").
  #
  # The line goes through Kernel#warn, so `Warning.warn` hooks and `-W0`
  # see it like any other warning.
  module Deprecation
    @warned = {}
    @lock = Mutex.new

    class << self
      # Warns once per process for `old`.
      # @param old [String] the old spelling, as the user wrote it
      # @param new [String] what to write instead
      # @return [Boolean] whether this call warned
      def warn(old, new)
        first = @lock.synchronize { @warned[old] ? false : (@warned[old] = true) }
        Kernel.warn("herd: #{old} is deprecated; use #{new} (the old name works until herd 1.0)") if first
        first
      end

      # Forgets what was warned: a clean slate for tests.
      # @api private
      # @return [void]
      def reset!
        @lock.synchronize { @warned.clear }
      end
    end
  end
end
