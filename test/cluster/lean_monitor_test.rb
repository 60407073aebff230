# frozen_string_literal: true

require "test_helper"
require "support/server_harness"
require "herd/cluster/lean_monitor"

class LeanMonitorTest < Herd::Test
  LeanMonitor = Herd::Cluster::LeanMonitor
  BUNDLER_RUBYOPT = "-r/usr/share/rubygems-integration/all/gems/bundler-2.3.15/lib/bundler/setup"
  # The environment `bundle exec` gives the command (the test process may
  # not run under it): RUBYOPT loads bundler/setup, BUNDLE_GEMFILE names ours.
  BUNDLED = {"RUBYOPT" => "-rbundler/setup", "BUNDLE_GEMFILE" => File.join(Herd::Test::ROOT, "Gemfile")}.freeze
  MAX_RATIO = "RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO"
  GC_APP = "run ->(env) { [200, {}, [\"gc=\#{ENV[#{MAX_RATIO.inspect}].inspect}\"]] }\n"

  def teardown
    @server&.cleanup
  end

  # --- who re-executes ------------------------------------------------

  def test_a_bundled_command_on_linux_is_eligible
    assert_nil LeanMonitor.ineligible(["serve"], {"RUBYOPT" => BUNDLER_RUBYOPT})
    assert_nil LeanMonitor.ineligible(["serve"], {"RUBYOPT" => "-r bundler/setup -W0"})
    assert_nil LeanMonitor.ineligible(["serve"], {})
  end

  def test_each_way_to_keep_rubygems_in_the_monitor_says_why
    assert_equal "HERD_LEAN_MONITOR=0", LeanMonitor.ineligible(["serve"], {"HERD_LEAN_MONITOR" => "0"})
    assert_equal "--no-lean-monitor", LeanMonitor.ineligible(["serve", "--no-lean-monitor"], {})
    assert_equal "plain preload", LeanMonitor.ineligible(["serve", "--no-subreaper"], {})
    assert_equal "plain preload", LeanMonitor.ineligible(["serve"], {"HERD_NO_SUBREAPER" => "1"})
    assert_equal "already lean", LeanMonitor.ineligible(["serve"], {LeanMonitor::BOOT_ENV => "x"})
  end

  def test_rubyopt_requiring_another_library_keeps_rubygems_in_the_monitor
    reason = "RUBYOPT requires more than bundler/setup"
    assert_equal reason, LeanMonitor.ineligible(["serve"], {"RUBYOPT" => "#{BUNDLER_RUBYOPT} -rdotenv/load"})
    assert_equal reason, LeanMonitor.ineligible(["serve"], {"RUBYOPT" => "-r json"})
  end

  def test_the_lean_environment_drops_bundler_setup_from_rubyopt_and_describes_the_command
    env = LeanMonitor.send(:lean_env, {"RUBYOPT" => "#{BUNDLER_RUBYOPT} -W0", "BUNDLE_GEMFILE" => "/app/Gemfile"})
    assert_equal "-W0", env["RUBYOPT"]
    boot = Marshal.load(env[LeanMonitor::BOOT_ENV].unpack1("m0")) # rubocop:disable Security/MarshalLoad
    assert_equal "#{BUNDLER_RUBYOPT} -W0", boot[:rubyopt]
    assert_equal "/app/Gemfile", boot[:gemfile]
    assert_equal $LOAD_PATH.map(&:to_s), boot[:load_path]
    assert_nil LeanMonitor.send(:lean_env, {"RUBYOPT" => BUNDLER_RUBYOPT})["RUBYOPT"], "nothing left: unset"
  end

  def test_herds_ruby_gc_defaults_fill_in_only_what_the_command_did_not_set
    env = LeanMonitor.send(:lean_env, {"RUBYOPT" => BUNDLER_RUBYOPT})
    assert_equal "0.25", env[MAX_RATIO]
    boot = Marshal.load(env[LeanMonitor::BOOT_ENV].unpack1("m0")) # rubocop:disable Security/MarshalLoad
    assert_equal Herd::Cluster::RubyGCDefaults.defaults, boot[:ruby_gc], "remembered, to be taken out of ENV after the exec"

    env = LeanMonitor.send(:lean_env, {"RUBYOPT" => BUNDLER_RUBYOPT, MAX_RATIO => "0.5"})
    refute env.key?(MAX_RATIO), "the user's value stays as it is"
    boot = Marshal.load(env[LeanMonitor::BOOT_ENV].unpack1("m0")) # rubocop:disable Security/MarshalLoad
    assert_equal Herd::Cluster::RubyGCDefaults.defaults.except(MAX_RATIO), boot[:ruby_gc]
  end

  # Ruby 3.4 grows its heap by slots: a minor GC under the minimum ratio
  # of free slots makes the next GC a major one without growing the heap.
  def test_the_minimum_free_ratio_is_lowered_only_where_the_heap_grows_by_slots
    min_ratio = "RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO"
    defaults = Herd::Cluster::RubyGCDefaults.defaults
    if GC.stat.key?(:heap_allocatable_slots)
      assert_equal "0.10", defaults[min_ratio]
    else
      refute defaults.key?(min_ratio), "Ruby #{RUBY_VERSION} keeps its own minimum"
    end
    refute Herd::Cluster::RubyGCDefaults.missing(min_ratio => "0.3").key?(min_ratio), "the user's value stays"
  end

  # --- the re-executed process -----------------------------------------

  def test_adopt_takes_herds_gc_settings_out_of_env_once_ruby_has_read_them
    result = in_child do
      boot = {rubygems: true, bundler: false, gemfile: nil, rubyopt: nil, load_path: [], ruby_gc: {MAX_RATIO => "0.25"}}
      env = {LeanMonitor::BOOT_ENV => [Marshal.dump(boot)].pack("m0"), MAX_RATIO => "0.25", "OTHER" => "1"}
      LeanMonitor.adopt!(env: env)
      [env, LeanMonitor.ruby_gc]
    end
    env, ruby_gc = result
    assert_equal({"OTHER" => "1"}, env)
    assert_equal({MAX_RATIO => "0.25"}, ruby_gc)
  end

  def test_adopt_takes_the_description_out_of_env_and_restore_puts_the_load_path_back
    result = in_child do
      boot = {rubygems: true, bundler: false, gemfile: nil, rubyopt: "-W0", load_path: ["/nowhere/lib"]}
      env = {LeanMonitor::BOOT_ENV => [Marshal.dump(boot)].pack("m0"), "RUBYOPT" => nil}
      adopted = LeanMonitor.adopt!(env: env)
      state = LeanMonitor.state
      restored = LeanMonitor.restore!
      [adopted, state, env, restored, LeanMonitor.state, $LOAD_PATH.first, LeanMonitor.restore!]
    end
    adopted, state, env, restored, state_after, first_path, again = result
    assert adopted
    assert_equal :lean, state
    assert_equal({"RUBYOPT" => "-W0"}, env, "the description leaves ENV; RUBYOPT is the command's again")
    assert restored
    assert_equal :restored, state_after
    assert_equal "/nowhere/lib", first_path, "the command's load path comes first"
    refute again, "restoring twice does nothing"
  end

  def test_a_gem_of_the_bundle_whose_file_was_loaded_from_rubys_own_library_is_named
    spec = Gem.loaded_specs.values.reject(&:default_gem?).find { |candidate| Dir[File.join(candidate.full_require_paths.first, "*.rb")].any? }
    file = File.basename(Dir[File.join(spec.full_require_paths.first, "*.rb")].first)
    loaded = [File.join(RbConfig::CONFIG["rubylibdir"], file)]
    assert_includes LeanMonitor.send(:shadowed_gems, loaded), "#{spec.name} #{spec.version}"
    assert_empty LeanMonitor.send(:shadowed_gems, [File.join(RbConfig::CONFIG["rubylibdir"], "no_such_file.rb")])
  end

  # Ruby >= 4.0 ships fiddle as a bundled gem: the re-exec without
  # RubyGems must still find it.
  def test_a_library_the_monitor_needs_from_a_gem_goes_on_its_load_path
    own = File.join(RbConfig::CONFIG["rubylibdir"], "fiddle.rb")
    assert_equal ["-I", LeanMonitor::LIB], LeanMonitor.load_path_flags("fiddle" => own)
    spec = Gem.loaded_specs.values.reject(&:default_gem?).first
    flags = LeanMonitor.load_path_flags(spec.name => File.join(spec.full_require_paths.first, "#{spec.name}.rb"))
    assert_equal ["-I", LeanMonitor::LIB] + spec.full_require_paths.flat_map { |dir| ["-I", dir] }, flags
  end

  def test_a_process_never_re_executed_restores_nothing
    refute in_child { [LeanMonitor.adopt!(env: {}), LeanMonitor.restore!].any? }
  end

  # --- a real server ------------------------------------------------------

  def test_the_monitor_runs_without_rubygems_and_the_app_has_the_command_environment
    app = <<~RUBY
      run ->(env) { [200, {}, ["bundler=\#{defined?(Bundler) ? 1 : 0} rubyopt=\#{ENV["RUBYOPT"]} boot=\#{ENV.key?("#{LeanMonitor::BOOT_ENV}")}"]] }
    RUBY
    @server = Herd::ServerHarness.new(app: app, args: ["-w", "1"], env: BUNDLED)
    @server.wait_for(/monitor: lean: re-executed without RubyGems and Bundler/)
    body = @server.get("/").split("\r\n\r\n", 2).last
    # What any process started with this environment sees (bundler/setup edits RUBYOPT).
    rubyopt, = ruby_run("print ENV['RUBYOPT']", env: BUNDLED)
    assert_equal "bundler=1 rubyopt=#{rubyopt} boot=false", body
    environ = File.binread("/proc/#{@server.pid}/environ").split("\0")
    assert environ.any? { |entry| entry.start_with?("#{LeanMonitor::BOOT_ENV}=") }, "the monitor was re-executed"
    refute_includes environ, "RUBYOPT=-rbundler/setup", "the monitor started without bundler/setup"
  end

  def test_the_whole_tree_runs_with_herds_gc_default_and_the_app_does_not_pass_it_on
    @server = Herd::ServerHarness.new(app: GC_APP, args: ["-w", "1"], env: BUNDLED.merge(MAX_RATIO => nil))
    @server.wait_for(/monitor: Ruby's GC: #{MAX_RATIO}=0\.25( \S+)* for every process of the server/o)
    assert_equal "gc=nil", @server.get("/").split("\r\n\r\n", 2).last
    environ = File.binread("/proc/#{@server.pid}/environ").split("\0")
    assert_includes environ, "#{MAX_RATIO}=0.25", "Ruby read it at the exec"
  end

  def test_a_gc_setting_of_the_user_wins_over_herds_default
    @server = Herd::ServerHarness.new(app: GC_APP, args: ["-w", "1"], env: BUNDLED.merge(MAX_RATIO => "0.5"))
    assert_equal "gc=\"0.5\"", @server.get("/").split("\r\n\r\n", 2).last
    assert_includes File.binread("/proc/#{@server.pid}/environ").split("\0"), "#{MAX_RATIO}=0.5"
    refute @server.lines.any? { |line| line.include?("Ruby's GC") && line.include?(MAX_RATIO) }, @server.lines.join
  end

  def test_herd_lean_monitor_0_keeps_the_monitor_as_started
    @server = Herd::ServerHarness.new(args: ["-w", "1"], env: BUNDLED.merge("HERD_LEAN_MONITOR" => "0"))
    assert_match(/pid=\d+/, @server.get("/"))
    refute @server.lines.any? { |line| line.include?("monitor: lean") }, @server.lines.join
    environ = File.binread("/proc/#{@server.pid}/environ").split("\0")
    refute environ.any? { |entry| entry.start_with?("#{LeanMonitor::BOOT_ENV}=") }
  end

  def test_a_config_file_that_requires_a_gem_loads_rubygems_in_the_monitor
    @server = Herd::ServerHarness.new(config: "require \"rack\"\nworkers 1\n", env: BUNDLED)
    @server.wait_for(/monitor: the config file needs a gem: RubyGems and Bundler loaded in the monitor too/)
    assert_match(/pid=\d+/, @server.get("/"))
  end

  def test_debug_survives_the_re_exec
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "bad.rb"), "workers :many\n")
      _, err, status = herd_cli("serve", "-c", File.join(dir, "bad.rb"), env: BUNDLED)
      assert_equal 1, status.exitstatus
      assert_equal 1, err.lines.size, err
      _, err, status = herd_cli("--debug", "serve", "-c", File.join(dir, "bad.rb"), env: BUNDLED)
      assert_equal 1, status.exitstatus
      assert_operator err.lines.size, :>, 1, "a backtrace follows with --debug"
      assert_match(/workers/, err.lines.first)
    end
  end
end
