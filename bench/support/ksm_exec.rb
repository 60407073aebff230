# frozen_string_literal: true

# Runs a command with the kernel's same-page merging (KSM) asked for, as
# systemd's `MemoryKSM=yes` does: prctl(PR_SET_MEMORY_MERGE) on this
# process, which exec and fork keep, so every process of the command may
# have its identical anonymous pages merged by ksmd. The benches run the
# peers this way, to compare with herd's own `ksm` setting.
#
#   ruby bench/support/ksm_exec.rb COMMAND ARGS...
require "fiddle"

PR_SET_MEMORY_MERGE = 67
prctl = Fiddle::Function.new(Fiddle::Handle::DEFAULT["prctl"], [Fiddle::TYPE_INT] + [Fiddle::TYPE_LONG] * 4, Fiddle::TYPE_INT)
abort "ksm_exec: prctl(PR_SET_MEMORY_MERGE) refused (Linux >= 6.4 needed)" unless prctl.call(PR_SET_MEMORY_MERGE, 1, 0, 0, 0).zero?
abort "usage: ruby bench/support/ksm_exec.rb COMMAND ARGS..." if ARGV.empty?
exec(*ARGV)
