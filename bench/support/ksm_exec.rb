# frozen_string_literal: true

# Runs a command with the kernel's same-page merging (KSM) asked for, as
# systemd's `MemoryKSM=yes` does: prctl(PR_SET_MEMORY_MERGE) on this
# process, which exec (Linux >= 6.7) and fork keep, so every process of the
# command may have its identical anonymous pages merged by ksmd. The
# benches run the peers this way, to compare with herd's own `ksm` setting.
#
#   ruby bench/support/ksm_exec.rb COMMAND ARGS...
require "etc"
require "fiddle"

PR_SET_MEMORY_MERGE = 67
prctl = Fiddle::Function.new(Fiddle::Handle::DEFAULT["prctl"], [Fiddle::TYPE_INT] + [Fiddle::TYPE_LONG] * 4, Fiddle::TYPE_INT)
release = Etc.uname[:release].scan(/\d+/).first(2).map(&:to_i)
abort "ksm_exec: Linux #{release.join(".")} drops the request at exec (6.7 or later keeps it)" if (release <=> [6, 7]).negative?
abort "ksm_exec: prctl(PR_SET_MEMORY_MERGE) refused (a kernel built without KSM?)" unless prctl.call(PR_SET_MEMORY_MERGE, 1, 0, 0, 0).zero?
abort "usage: ruby bench/support/ksm_exec.rb COMMAND ARGS..." if ARGV.empty?
exec(*ARGV)
