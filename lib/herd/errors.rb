# frozen_string_literal: true

module Herd
  # Base class of every error herd raises on purpose. Rescue this to catch them all.
  class Error < StandardError
    # `rescue Herd::Error` (and `rescue Herd::ItemError`) also catch
    # {Herd::TimeoutError}, which must inherit from the standard library's
    # `Timeout::Error` and so cannot inherit from this class.
    # @param other [Object]
    # @return [Boolean]
    def self.===(other)
      super || (Exception === other && other.is_a?(self))
    end
  end

  # /proc is missing or a process's memory cannot be read.
  class MemoryReadError < Error; end

  # The process asked about does not exist (or exited while it was being read).
  class NoSuchProcess < MemoryReadError; end

  # A fork callback registered with {Herd.before_fork} raised, so the fork was not performed.
  class ForkCallbackError < Error; end

  # Bad input on the command line; the CLI exits 2 on these.
  class UsageError < Error; end
end

module Herd
  # The server's configuration (file or command line) is wrong; the message says how.
  class ConfigError < Error; end

  # A server's control endpoint (control_listen) could not be reached or
  # answered something else than herd's stats.
  class ControlError < Error; end
end

module Herd
  # A job system herd runs (`herd sidekiq`) is missing, misconfigured or
  # stopped by itself; the message says what to do.
  class JobsError < Error; end
end
