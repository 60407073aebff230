# frozen_string_literal: true

require "test_helper"
require "herd/memory"

class MemoryTest < Herd::Test
  def test_sample_defaults_to_this_process
    sample = Herd::Memory.sample

    assert_kind_of Herd::Memory::Sample, sample
    assert_operator sample.pss, :>, 0
  end

  def test_report_of_one_process
    report = Herd::Memory.report(Process.pid)

    assert_equal [Process.pid], report.rows.map(&:pid)
    assert_equal Process.ppid, report.rows.first.ppid
    refute_predicate report, :tree?
    assert_equal report.rows.first.sample, report.total
  end

  def test_report_of_a_tree_includes_a_forked_child
    with_child do |child|
      report = Herd::Memory.report(Process.pid, tree: true)

      assert_predicate report, :tree?
      assert_equal Process.pid, report.rows.first.pid
      assert_includes report.rows.map(&:pid), child
      assert_equal "herd-memory-test-child", report.rows.find { |row| row.pid == child }.title
    end
  end

  def test_tree_without_root
    with_child do |child|
      pids = Herd::Memory.tree(Process.pid, include_root: false).rows.map(&:pid)

      refute_includes pids, Process.pid
      assert_includes pids, child
    end
  end

  def test_tree_leaves_out_a_descendant_and_its_own_descendants
    with_child_and_grandchild do |child, grandchild, other|
      report = Herd::Memory.tree(Process.pid, leave_out: [child])
      pids = report.rows.map(&:pid)

      assert_equal [child, grandchild], report.left_out
      refute_includes pids, child
      refute_includes pids, grandchild
      assert_includes pids, other
      assert_equal report.rows.map(&:sample).reduce(Herd::Memory::Sample.zero, :+), report.total
      assert_equal [child, grandchild], report.to_h[:left_out]
    end
  end

  def test_leave_out_never_drops_the_root_and_ignores_pids_outside_the_tree
    with_child do |child|
      report = Herd::Memory.report(Process.pid, tree: true, leave_out: [Process.pid, Process.ppid, 999_999_999])

      assert_equal Process.pid, report.rows.first.pid
      assert_includes report.rows.map(&:pid), child
      assert_empty report.left_out
    end
  end

  def test_no_such_process
    pid = Process.spawn(PLAIN_RUBY, RbConfig.ruby, "-e", "exit")
    Process.wait(pid)

    error = assert_raises(Herd::NoSuchProcess) { Herd::Memory.sample(pid) }
    assert_equal "no process with pid #{pid}", error.message
    assert_raises(Herd::NoSuchProcess) { Herd::Memory.tree(pid) }
    assert_raises(Herd::NoSuchProcess) { Herd::Memory.report(pid) }
  end

  private

  # this test ─┬─ child ── grandchild
  #            └─ other
  def with_child_and_grandchild
    ready_r, ready_w = IO.pipe
    lifeline, release = IO.pipe
    forked = [:child, :other].map do |name|
      Process.fork do
        release.close
        grandchild = (name == :child) && Process.fork do
          ready_w.puts("grandchild #{Process.pid}")
          lifeline.read
        ensure
          exit!(0)
        end
        ready_w.puts("#{name} #{Process.pid}")
        lifeline.read
        Process.wait(grandchild) if grandchild
      ensure
        exit!(0)
      end
    end
    ready_w.close
    lifeline.close
    pids = 3.times.to_h { ready_r.gets.split.then { |name, pid| [name.to_sym, Integer(pid)] } }
    yield pids.values_at(:child, :grandchild, :other)
  ensure
    release&.close
    ready_r&.close
    ready_w&.close unless ready_w&.closed?
    forked&.each { |pid| Process.wait(pid) }
  end

  def with_child
    ready_r, ready_w = IO.pipe
    lifeline, release = IO.pipe
    pid = Process.fork do
      release.close
      Process.setproctitle("herd-memory-test-child")
      ready_w.puts("ready")
      ready_w.close
      lifeline.read
    ensure
      exit!(0)
    end
    ready_w.close
    lifeline.close
    ready_r.gets
    yield pid
  ensure
    release&.close
    ready_r&.close
    Process.wait(pid) if pid
  end
end
