# frozen_string_literal: true

require "tmpdir"
require "fileutils"

module Herd
  # A throwaway /proc in a tmpdir, for the cases this kernel never shows
  # (no smaps_rollup, no children files, a process vanishing mid-read).
  module FakeProc
    def fake_proc(&block)
      Dir.mktmpdir("herd-proc", &block)
    end

    def write(root, pid, name, text)
      FileUtils.mkdir_p(File.join(root, pid.to_s))
      File.write(File.join(root, pid.to_s, name), text)
    end
  end
end
