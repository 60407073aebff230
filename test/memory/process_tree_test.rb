# frozen_string_literal: true

require "test_helper"
require "herd/memory"
require "support/fake_proc"

class ProcessTreeTest < Herd::Test
  include Herd::FakeProc

  # A real tree under this test process:
  #
  #   test ─┬─ a ─┬─ g            (forked by a's main thread)
  #         │     └─ c            (forked by a second thread of a)
  #         └─ b
  #
  # Every descendant sets its title, says so on `ready`, then blocks on
  # `lifeline` until the test closes the write end: no sleeps, and nothing
  # outlives the test.
  def with_real_tree
    lifeline, release = IO.pipe
    ready_r, ready_w = IO.pipe
    forked = []
    forked << Process.fork do
      child_setup(release, ready_r)
      grandchild = Process.fork { hold("g", lifeline, ready_w) }
      thread = Thread.new do
        child = Process.fork { hold("c", lifeline, ready_w) }
        lifeline.read # keeps this thread, the only one listing c as its child, alive
        Process.wait(child)
      end
      hold("a", lifeline, ready_w) { Process.wait(grandchild) && thread.join }
    end
    forked << Process.fork do
      child_setup(release, ready_r)
      hold("b", lifeline, ready_w)
    end
    ready_w.close
    pids = 4.times.to_h { ready_r.gets.split.then { |name, pid| [name.to_sym, Integer(pid)] } }
    yield pids
  ensure
    release&.close
    [lifeline, ready_r, ready_w].each { |io| io&.close unless io&.closed? }
    forked.each { |pid| Process.wait(pid) }
  end

  def test_finds_every_descendant_of_a_real_tree
    with_real_tree do |pids|
      tree = Herd::Memory::ProcessTree.new

      assert_equal pids.values.sort, (tree.descendants(Process.pid) & pids.values).sort
      assert_equal [pids[:g], pids[:c]].sort, tree.descendants(pids[:a]).sort
      assert_empty tree.descendants(pids[:b])
    end
  end

  def test_finds_a_child_forked_from_a_non_main_thread
    with_real_tree do |pids|
      a = pids[:a]
      main_thread_children = File.read("/proc/#{a}/task/#{a}/children").split.map(&:to_i)
      refute_includes main_thread_children, pids[:c], "c must be listed only under a's second thread for this test to mean anything"

      assert_includes Herd::Memory::ProcessTree.new.children(a), pids[:c]
    end
  end

  def test_descendants_are_depth_first
    with_real_tree do |pids|
      order = Herd::Memory::ProcessTree.new.descendants(Process.pid)

      [:g, :c].each { |name| assert_operator order.index(pids[:a]), :<, order.index(pids[name]) }
    end
  end

  def test_titles_and_parents_of_a_real_tree
    with_real_tree do |pids|
      tree = Herd::Memory::ProcessTree.new

      pids.each { |name, pid| assert_equal "herd-tree-#{name}", tree.title(pid) }
      assert_equal pids[:a], tree.ppid(pids[:c])
      assert_equal Process.pid, tree.ppid(pids[:b])
    end
  end

  def test_memory_tree_reports_every_process_of_a_real_tree
    with_real_tree do |pids|
      report = Herd::Memory.tree(pids[:a])

      assert_equal [pids[:a], pids[:g], pids[:c]].sort, report.rows.map(&:pid).sort
      assert_equal pids[:a], report.rows.first.pid
      assert_equal report.rows.sum { |row| row.sample.pss }, report.total.pss
      assert_equal ["herd-tree-c", "herd-tree-g"], report.rows.drop(1).map(&:title).sort
    end
  end

  def test_falls_back_to_ppid_in_stat_without_children_files
    fake_proc do |root|
      stat(root, 1, "init", 0)
      stat(root, 10, "server", 1)
      stat(root, 11, "worker (a) S 99", 10) # comm may hold spaces and parentheses
      stat(root, 12, "w", 11)
      stat(root, 20, "other", 1)
      stat(root, 30, "y", 10)
      FileUtils.mkdir_p(File.join(root, "self"))
      tree = Herd::Memory::ProcessTree.new(proc_root: root)

      assert_equal [11, 30], tree.children(10)
      assert_equal [11, 12, 30], tree.descendants(10)
      assert_equal 10, tree.ppid(11)
    end
  end

  def test_processes_and_threads_vanishing_mid_read_are_skipped
    fake_proc do |root|
      children(root, 10, 10, "11 12 ")
      File.symlink(File.join(root, "gone"), File.join(root, "10", "task", "13")) # a thread that exited
      children(root, 11, 11, "")
      tree = Herd::Memory::ProcessTree.new(proc_root: root)

      assert_equal [11], tree.descendants(10) # 12 has no /proc dir any more
      assert_empty tree.descendants(99)
      assert_empty tree.children(99)
      assert_nil tree.ppid(99)
      assert_nil tree.title(99)
    end
  end

  def test_memory_tree_skips_a_descendant_that_vanished
    fake_proc do |root|
      rollup = File.read(File.join(ROOT, "test", "fixtures", "smaps", "rollup_modern"))
      children(root, 10, 10, "11 12")
      children(root, 11, 11, "")
      [10, 11].each { |pid| File.write(File.join(root, pid.to_s, "smaps_rollup"), rollup) }

      report = Herd::Memory.tree(10, proc_root: root)

      assert_equal [10, 11], report.rows.map(&:pid)
      assert_equal [11], Herd::Memory.tree(10, include_root: false, proc_root: root).rows.map(&:pid)
      assert_raises(Herd::NoSuchProcess) { Herd::Memory.tree(12, proc_root: root) }
    end
  end

  def test_title_from_cmdline_or_comm
    fake_proc do |root|
      write(root, 1, "cmdline", "puma: cluster worker 0\0\0\0\0")
      write(root, 2, "cmdline", "ruby\0-e\0sleep 1\0")
      write(root, 3, "cmdline", "")
      write(root, 3, "comm", "kworker/0:1\n")
      tree = Herd::Memory::ProcessTree.new(proc_root: root)

      assert_equal "puma: cluster worker 0", tree.title(1)
      assert_equal "ruby -e sleep 1", tree.title(2)
      assert_equal "kworker/0:1", tree.title(3)
    end
  end

  private

  def child_setup(release, ready_r)
    release.close
    ready_r.close
  end

  # Runs in a forked child: announce, wait for the test to let go, clean up, exit.
  def hold(name, lifeline, ready_w)
    Process.setproctitle("herd-tree-#{name}")
    ready_w.puts("#{name} #{Process.pid}")
    ready_w.flush
    lifeline.read
    yield if block_given?
  ensure
    exit!(0)
  end

  def stat(root, pid, comm, ppid)
    write(root, pid, "stat", "#{pid} (#{comm}) S #{ppid} #{pid} #{pid} 0 -1 4194560 0 0 0 0\n")
  end

  def children(root, pid, tid, text)
    dir = File.join(root, pid.to_s, "task", tid.to_s)
    FileUtils.mkdir_p(dir)
    File.write(File.join(dir, "children"), text)
  end
end
