# frozen_string_literal: true

require "rake/testtask"

# The fault-injection suite (test/faults/): SIGKILLs of workers, molds and
# the monitor, reforks and signal bursts under load, pool faults. Minutes,
# not seconds, so it is a task of its own. HERD_FAULT_SEED=N replays a run's
# random moments.
namespace :test do
  Rake::TestTask.new(:faults) do |t|
    t.description = "Fault injection: kill -9 under load, reforks, monitor SIGKILLs, signal bursts, pool faults (~4 min)"
    t.libs << "test" << "lib"
    t.test_files = FileList["test/faults/**/*_test.rb"]
    t.warning = false
  end
end
