# frozen_string_literal: true

require "test_helper"
require "herd/memory"
require "support/fake_proc"
require "minitest/mock"

class SmapsTest < Herd::Test
  include Herd::FakeProc

  FIXTURES = File.join(Herd::Test::ROOT, "test", "fixtures", "smaps")
  KB = 1024

  def fixture(name)
    File.read(File.join(FIXTURES, name))
  end

  def test_rollup_from_a_modern_kernel
    sample = Herd::Memory::Smaps.parse_rollup(fixture("rollup_modern"))

    assert_equal({rss: 20480 * KB, pss: 12000 * KB, pss_anon: 8500 * KB, pss_dirty: 9000 * KB,
                  shared_clean: 6000 * KB, shared_dirty: 4000 * KB, private_clean: 1480 * KB,
                  private_dirty: 9000 * KB, swap: 512 * KB, anon_huge_pages: 2048 * KB}, sample.to_h)
    assert_equal 10480 * KB, sample.uss
    assert_equal 10000 * KB, sample.shared
  end

  def test_rollup_from_an_old_kernel_leaves_the_missing_fields_nil
    sample = Herd::Memory::Smaps.parse_rollup(fixture("rollup_old_kernel"))

    assert_nil sample.pss_anon
    assert_nil sample.pss_dirty
    assert_equal 10240 * KB, sample.rss
    assert_equal 6144 * KB, sample.pss
    assert_equal 3072 * KB, sample.private_dirty
    assert_equal 0, sample.swap
  end

  def test_full_smaps_sums_every_mapping_and_skips_headers
    sample = Herd::Memory::Smaps.parse_smaps(fixture("smaps_full"))

    # One header's path reads "Rss:   999 kB": counting it would give 6643 kB.
    assert_equal({rss: 5644 * KB, pss: 5025 * KB, pss_anon: nil, pss_dirty: 4996 * KB,
                  shared_clean: 28 * KB, shared_dirty: 800 * KB, private_clean: 20 * KB,
                  private_dirty: 4796 * KB, swap: 36 * KB, anon_huge_pages: 2048 * KB}, sample.to_h)
    assert_equal sample.rss, sample.shared + sample.uss
  end

  def test_empty_text_is_a_process_with_nothing_mapped
    assert_equal Herd::Memory::Sample.zero, Herd::Memory::Smaps.parse_rollup("")
    assert_equal Herd::Memory::Sample.zero, Herd::Memory::Smaps.parse_smaps("\n  \n")
  end

  def test_malformed_lines_are_ignored
    sample = Herd::Memory::Smaps.parse_rollup(fixture("rollup_malformed"))

    assert_equal 1756 * KB, sample.rss
    assert_equal 657 * KB, sample.pss
    assert_equal 104 * KB, sample.private_clean
    assert_equal 0, sample.shared_clean # "banana kB"
    assert_equal 0, sample.shared_dirty # "12 MB": not a kB line
    assert_equal 0, sample.private_dirty # no unit
  end

  def test_text_with_no_known_field_is_a_clear_error
    error = assert_raises(Herd::MemoryReadError) { Herd::Memory::Smaps.parse_rollup("hello\nworld\n") }
    assert_match(/unrecognized smaps format/, error.message)
  end

  def test_read_prefers_the_rollup
    fake_proc do |root|
      write(root, 42, "smaps_rollup", fixture("rollup_modern"))
      write(root, 42, "smaps", fixture("smaps_full"))

      assert_equal 20480 * KB, Herd::Memory::Smaps.read(42, proc_root: root).rss
    end
  end

  def test_read_falls_back_to_full_smaps_without_a_rollup
    fake_proc do |root|
      write(root, 42, "smaps", fixture("smaps_full"))

      assert_equal Herd::Memory::Smaps.parse_smaps(fixture("smaps_full")), Herd::Memory::Smaps.read(42, proc_root: root)
    end
  end

  def test_read_of_a_missing_process
    fake_proc do |root|
      error = assert_raises(Herd::NoSuchProcess) { Herd::Memory::Smaps.read(42, proc_root: root) }
      assert_equal "no process with pid 42", error.message
    end
  end

  def test_read_without_proc_says_linux_is_needed
    error = assert_raises(Herd::MemoryReadError) { Herd::Memory::Smaps.read(1, proc_root: "/no/such/proc") }
    assert_match(/Linux/, error.message)
  end

  def test_read_when_permission_is_denied_says_what_to_do
    fake_proc do |root|
      write(root, 42, "smaps_rollup", fixture("rollup_modern"))
      denied = ->(*) { raise Errno::EACCES }
      error = File.stub(:read, denied) { assert_raises(Herd::MemoryReadError) { Herd::Memory::Smaps.read(42, proc_root: root) } }

      refute_kind_of Herd::NoSuchProcess, error
      assert_equal "cannot read #{root}/42/smaps_rollup: permission denied (run as the process's user or root)", error.message
    end
  end

  def test_read_this_process
    sample = Herd::Memory::Smaps.read(Process.pid)

    assert_operator sample.rss, :>, 0
    assert_operator sample.uss, :<=, sample.pss
    assert_operator sample.pss, :<=, sample.rss
  end
end
