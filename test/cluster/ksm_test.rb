# frozen_string_literal: true

require "test_helper"
require "stringio"
require "tmpdir"
require "herd/cluster/ksm"
require "herd/cluster/log"
require "herd/server/config"
require "support/server_harness"

# The `ksm` setting: what the monitor asks of the kernel, what it says in
# the log, and that molds and workers inherit it. Every request is made in
# a forked child or a server, never in the test process, whose later forks
# would inherit it.
class KSMTest < Herd::Test
  include Herd::ServerTest

  ASKED = /ksm: the kernel may merge identical pages|warning: ksm is asked for, but the kernel's KSM daemon/

  # Runs `apply` calls in a child; returns its log and whether the kernel
  # lists the child as merging (nil where the kernel shows nothing).
  def in_child(wanted, run: "1", env: {})
    sysfs = Dir.mktmpdir("ksm-sysfs")
    File.write(File.join(sysfs, "run"), "#{run}\n") if run
    File.write(File.join(sysfs, "pages_to_scan"), "100\n")
    File.write(File.join(sysfs, "sleep_millisecs"), "20\n")
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      log = StringIO.new
      ksm = Herd::Cluster::KSM.new(Herd::Cluster::Log.new(log), "monitor", env: env, sysfs: sysfs)
      Array(wanted).each { |value| ksm.apply(value) }
      writer.write(Marshal.dump([log.string, ksm.on?, merging(Process.pid)]))
      exit!(0)
    end
    writer.close
    result = Marshal.load(reader.read) # rubocop:disable Security/MarshalLoad -- our own child
    Process.wait(pid)
    result
  ensure
    FileUtils.rm_rf(sysfs)
  end

  # @return [Boolean, nil] /proc/PID/ksm_stat's ksm_merge_any (Linux >= 6.4)
  def self.merging(pid)
    stat = File.read("/proc/#{pid}/ksm_stat")
    stat[/^ksm_merge_any: (\w+)/, 1]&.then { |word| word == "yes" }
  rescue SystemCallError
    nil
  end

  def merging(pid) = self.class.merging(pid)

  # Whether this kernel takes PR_SET_MEMORY_MERGE (Linux >= 6.4 with KSM).
  def kernel_merges?
    @kernel_merges ||= begin
      pid = fork { exit!(Herd::Linux.memory_merge(true) ? 0 : 1) }
      Process.wait(pid)
      $?.success?
    end
  end

  def test_asking_tells_the_kernel_and_says_what_ksmd_does
    log, on, merging = in_child(true)
    unless kernel_merges?
      refute on
      return assert_match(/ksm stepped aside: the kernel refused PR_SET_MEMORY_MERGE/, log)
    end
    assert on
    assert_match(/monitor: ksm: the kernel may merge identical pages .*ksmd scans 100 pages every 20 ms/, log)
    assert_equal true, merging unless merging.nil?
  end

  def test_a_daemon_that_does_not_run_gets_a_warning_that_says_how_to_start_it
    skip_unless_kernel_merges
    log, on, = in_child(true, run: "0")
    assert on, "asked anyway: ksmd may be started later"
    assert_match(%r{warning: ksm is asked for, but the kernel's KSM daemon does not merge \(\S+/run is 0\): as root, echo 1 > \S+/run}, log)
  end

  def test_the_environment_switch_wins_over_the_setting
    log, on, merging = in_child(true, env: {"HERD_KSM" => "off"})
    refute on
    assert_match(/ksm: off \(HERD_KSM=off\)/, log)
    refute_match(ASKED, log)
    refute merging
  end

  def test_the_environment_switch_turns_it_on_without_the_setting
    skip_unless_kernel_merges
    log, on, merging = in_child(false, env: {"HERD_KSM" => "1"})
    assert on
    assert_match(ASKED, log)
    assert_equal true, merging unless merging.nil?
  end

  def test_turning_it_off_again_stops_it
    skip_unless_kernel_merges
    log, on, merging = in_child([true, false])
    refute on
    assert_match(/ksm: off for the processes forked from now on/, log)
    refute merging
  end

  def test_off_by_default_says_nothing
    log, on, merging = in_child(false)
    refute on
    assert_empty log
    refute merging
  end

  def test_the_setting_takes_only_true_or_false
    config = Herd::Server::Config.new
    config.ksm = "yes"
    error = assert_raises(Herd::ConfigError) { config.validate! }
    assert_match(/ksm must be true or false/, error.message)
  end

  # Every process of a server with `ksm true` is asked for: the mold and
  # the workers inherit the monitor's request.
  def test_every_process_of_a_server_inherits_it
    skip_unless_kernel_merges
    serve(config: "ksm true\n", args: ["-w", "2"])
    assert_match(ASKED, @server.lines.grep(/monitor: .*ksm/).join)
    pids = [@server.pid, *@server.descendants].select { |pid| Herd::Procfs.alive?(pid) }
    assert_operator pids.size, :>=, 4, "monitor, mold, 2 workers"
    pids.each { |pid| assert_equal true, merging(pid), "pid #{pid}: #{File.read("/proc/#{pid}/cmdline").tr("\0", " ")}" }
  end

  def test_a_server_without_it_asks_nothing
    skip_unless_kernel_merges
    serve(args: ["-w", "1"])
    refute_match(ASKED, @server.lines.join)
    @server.descendants.select { |pid| Herd::Procfs.alive?(pid) }.each { |pid| refute merging(pid) }
  end

  private

  def skip_unless_kernel_merges
    skip "this kernel has no PR_SET_MEMORY_MERGE (Linux >= 6.4 with KSM)" unless kernel_merges?
  end
end
