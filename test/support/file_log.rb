# frozen_string_literal: true

require "support/server_log"

module Herd
  # The log a server writes to a file, as under a service manager. The file
  # is read again by its path at each look, so after a rename (logrotate) it
  # is the new file that is read.
  class FileLog
    include ServerLog

    # @param path [String]
    # @param ended [#call] true once the server has exited
    def initialize(path, ended:)
      @path = path
      @exited = ended
    end

    # @return [Array<String>] every line so far (none before the file exists)
    def lines
      File.exist?(@path) ? File.readlines(@path) : []
    end

    def ended?
      @exited.call
    end

    # Nothing to wait for: every line is in the file.
    def finish(timeout: nil)
    end

    private

    # A file announces no new line: looked at again shortly.
    def await(_seen, seconds)
      sleep [0.02, seconds].min
    end

    def ending
      "the server exited"
    end
  end
end
