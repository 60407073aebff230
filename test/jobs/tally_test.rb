# frozen_string_literal: true

require "test_helper"
require "herd/jobs/tally"

class TallyTest < Herd::Test
  def test_counts_jobs_from_their_threads_and_names_those_running
    tally = Herd::Jobs::Tally.new
    started = Queue.new
    release = Queue.new
    threads = %w[MailJob HardJob HardJob].map do |name|
      Thread.new do
        tally.start(name)
        started << true
        release.pop
        tally.finish
      end
    end
    3.times { started.pop }
    assert_equal "HardJob x2, MailJob", tally.running
    assert_equal 0, tally.done
    3.times { release << true }
    threads.each(&:join)
    assert_nil tally.running
    assert_equal 3, tally.done
  end

  def test_a_long_list_ends_with_how_many_more_classes_run
    tally = Herd::Jobs::Tally.new
    threads = %w[A B C D E].map { |name| Thread.new { tally.start(name) } }
    threads.each(&:join)
    assert_equal "A, B, C, +2", tally.running
  end

  # The worker writes each change on the scoreboard from the job thread.
  def test_a_watcher_sees_each_start_and_end_as_it_happens
    tally = Herd::Jobs::Tally.new
    seen = []
    tally.watch { |running, done| seen << [running, done] }
    Thread.new { tally.start("MailJob") }.join
    tally.start("HardJob")
    tally.finish
    assert_equal [["MailJob", 0], ["HardJob, MailJob", 0], ["MailJob", 1]], seen
    tally.reset
    tally.start("HardJob")
    assert_equal 3, seen.size, "a process forked from one that ran jobs watches its own"
  end

  def test_a_finish_without_a_start_counts_nothing
    tally = Herd::Jobs::Tally.new
    tally.finish
    assert_equal 0, tally.done
  end

  def test_reset_forgets_the_jobs_of_the_process_it_was_forked_from
    tally = Herd::Jobs::Tally.new
    tally.start("MailJob")
    tally.finish
    tally.start("HardJob")
    tally.reset
    assert_equal [0, nil], [tally.done, tally.running]
  end
end
