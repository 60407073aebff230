# frozen_string_literal: true

require "fiddle"

module Herd
  # Tells whether a process ended through Ruby's whole exit or through
  # ProcessExit's fast finish. Ruby's exit frees every C object left on the
  # heap, calling its free function; the fast finish ends with exit! before
  # that walk. The witness is a C string (a path) whose free function is
  # libc's unlink: the file is gone after Ruby's own exit and still there
  # after the fast finish.
  module ExitWitness
    module_function

    # Writes the file at `path` and keeps a witness for it alive until exit.
    # @return [void]
    def arm(path)
      File.write(path, "witness\n")
      data = Fiddle::Pointer.malloc(path.bytesize + 1, Fiddle::Handle::DEFAULT["unlink"])
      data[0, path.bytesize + 1] = "#{path}\0"
      (@witnesses ||= []) << data
    end
  end
end
