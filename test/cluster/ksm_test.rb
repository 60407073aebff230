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

  ASKED = /ksm: the kernel may merge identical pages|warning: ksm is asked for/

  def setup
    super
    skip "this process already asks the kernel to merge its pages (inherited)" if merging?(Process.pid)
  end

  # Applies each setting in turn in a fresh KSM of a forked child; returns
  # its log, KSM#on? and whether the kernel lists the child as merging.
  # `before` runs first in the child (a parent's request, inherited).
  def apply_in_child(*settings, run: "1", env: {}, before: nil)
    sysfs = Dir.mktmpdir("ksm-sysfs")
    File.write(File.join(sysfs, "run"), "#{run}\n") if run
    File.write(File.join(sysfs, "pages_to_scan"), "100\n")
    File.write(File.join(sysfs, "sleep_millisecs"), "20\n")
    in_child do
      before&.call
      log = StringIO.new
      ksm = Herd::Cluster::KSM.new(Herd::Cluster::Log.new(log), "monitor", env: env, sysfs: sysfs)
      settings.each { |setting| ksm.apply(setting) }
      [log.string, ksm.on?, merging?(Process.pid)]
    end
  ensure
    FileUtils.rm_rf(sysfs)
  end

  def test_asking_tells_the_kernel_and_says_what_ksmd_does
    log, on, merging = apply_in_child(true)
    unless kernel_merges?
      refute on
      return assert_match(/ksm stepped aside: /, log)
    end
    assert on
    assert_match(/monitor: ksm: the kernel may merge identical pages .*ksmd scans 100 pages every 20 ms/, log)
    assert merging
  end

  def test_a_daemon_that_does_not_run_gets_a_warning_that_says_how_to_start_it
    skip_unless_kernel_merges
    log, on, = apply_in_child(true, run: "0")
    assert on, "asked anyway: ksmd may be started later"
    assert_match(%r{warning: ksm is asked for, but the kernel's KSM daemon does not merge \(\S+/run is 0\): as root on the host, echo 1 > \S+/run}, log)
  end

  def test_the_environment_switch_turns_it_off_over_the_setting
    log, on, merging = apply_in_child(true, env: {"HERD_KSM" => "off"})
    refute on
    assert_match(/ksm: off \(HERD_KSM=off\)/, log)
    refute_match(ASKED, log)
    refute merging
  end

  def test_the_environment_switch_turns_it_on_without_the_setting
    skip_unless_kernel_merges
    log, on, merging = apply_in_child(false, env: {"HERD_KSM" => "1"})
    assert on
    assert_match(/ksm: the kernel may merge identical pages of every process of this server \(HERD_KSM=1\)/, log)
    assert merging
  end

  def test_turning_it_off_again_stops_it
    skip_unless_kernel_merges
    log, on, merging = apply_in_child(true, false)
    refute on
    assert_match(/ksm: off for the processes forked from now on/, log)
    refute merging
  end

  # A parent's request (systemd's MemoryKSM=yes) is inherited: the setting
  # off, or HERD_KSM=0, takes it back.
  def test_a_request_inherited_from_the_parent_is_taken_back_when_off
    skip_unless_kernel_merges
    inherited = -> { Herd::Linux.memory_merge(true) }
    _, on, merging = apply_in_child(false, before: inherited)
    refute on
    refute merging
    log, on, merging = apply_in_child(false, env: {"HERD_KSM" => "0"}, before: inherited)
    refute on
    refute merging
    assert_match(/ksm: off \(HERD_KSM=0\)/, log)
  end

  def test_off_by_default_says_nothing
    log, on, merging = apply_in_child(false)
    refute on
    assert_empty log
    refute merging
  end

  def test_the_setting_takes_only_true_or_false
    config = Herd::Server::Config.new
    config.ksm = "yes"
    error = assert_raises(Herd::ConfigError) { config.validate! }
    assert_match(/ksm must be true or false, e\.g\. ksm true; got "yes"/, error.message)
  end

  # Every process of a server with `ksm true` is asked for: the mold and
  # the workers inherit the monitor's request; so does a plain preload's.
  def test_every_process_of_a_server_inherits_it
    skip_unless_kernel_merges
    [[], ["--no-subreaper"]].each do |flags|
      serve(config: "ksm true\n", args: ["-w", "2", *flags], env: {"HERD_KSM" => nil})
      assert_match(ASKED, @server.lines.grep(/monitor: .*ksm/).join)
      pids = server_pids
      assert_operator pids.size, :>=, flags.empty? ? 4 : 3, "monitor, mold (without --no-subreaper), 2 workers"
      pids.each { |pid| assert merging?(pid), "#{flags.join} pid #{pid}: #{File.read("/proc/#{pid}/cmdline").tr("\0", " ")}" }
      @server.cleanup
    end
  end

  def test_a_server_without_it_asks_nothing
    skip_unless_kernel_merges
    serve(args: ["-w", "1"], env: {"HERD_KSM" => nil})
    refute_match(ASKED, @server.lines.join)
    server_pids.each { |pid| refute merging?(pid) }
  end

  # HUP reads the setting again: the new mold and its workers get it.
  def test_a_reload_that_turns_it_on_reaches_the_new_generation
    skip_unless_kernel_merges
    serve(config: "workers 1\n", env: {"HERD_KSM" => nil})
    File.write(File.join(@server.dir, "herd.rb"), "workers 1\nksm true\n")
    @server.signal("HUP")
    @server.wait_for(ASKED)
    @server.wait_for(/worker 0 \(gen 1\), pid (\d+) ready/)
    worker = Integer(@server.lines.grep(/worker 0 \(gen 1\), pid (\d+) ready/).last[/pid (\d+)/, 1])
    assert merging?(@server.pid)
    assert merging?(worker)
  end

  private

  def server_pids
    [@server.pid, *@server.descendants].select { |pid| Herd::Procfs.alive?(pid) }
  end

  # Whether the kernel lists the process as asking for merging: the
  # ksm_merge_any line of /proc/PID/ksm_stat (Linux >= 6.13), else the
  # `mg` flag its request puts on every anonymous area of /proc/PID/smaps.
  def merging?(pid)
    stat = File.read("/proc/#{pid}/ksm_stat") if File.exist?("/proc/#{pid}/ksm_stat")
    any = stat && stat[/^ksm_merge_any: (\w+)/, 1]
    return any == "yes" if any

    File.read("/proc/#{pid}/smaps").lines.grep(/^VmFlags:/).any? { |line| line.split.include?("mg") }
  rescue SystemCallError
    false
  end

  # Whether this kernel takes PR_SET_MEMORY_MERGE (Linux >= 6.4 with KSM).
  def kernel_merges?
    return @kernel_merges if defined?(@kernel_merges)

    @kernel_merges = in_child { Herd::Linux.memory_merge(true) }
  end

  def skip_unless_kernel_merges
    skip "this kernel has no PR_SET_MEMORY_MERGE (Linux >= 6.4 with KSM)" unless kernel_merges?
  end
end
