# frozen_string_literal: true

module Herd
  # What a pid says about its process.
  # @api private
  module Pid
    module_function

    # @param pid [Integer]
    # @return [Boolean] whether a process has this pid (one of another user's counts)
    def alive?(pid)
      Process.kill(0, pid)
      true
    rescue Errno::ESRCH
      false
    rescue Errno::EPERM
      true
    end
  end
end
