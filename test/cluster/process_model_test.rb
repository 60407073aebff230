# frozen_string_literal: true

require "test_helper"
require "support/server_harness"

class ServerProcessModelTest < Herd::Test
  def serve(**options)
    @server = Herd::ServerHarness.new(**options)
  end

  def teardown
    @server&.cleanup
  end

  def titles
    @server.descendants.to_h { |pid| [pid, Herd::Memory::ProcessTree.new.title(pid)] }
  end

  def test_serves_with_a_mold_and_workers_all_direct_children_of_the_monitor
    serve(args: ["-w", "2"])
    response = @server.get("/hello")
    assert_match(%r{\AHTTP/1.1 200}, response)
    assert_match(/path=\/hello/, response)
    tree = Herd::Memory::ProcessTree.new
    children = @server.descendants
    assert_equal 3, children.size, titles.inspect
    children.each { |pid| assert_equal @server.pid, tree.ppid(pid), "#{tree.title(pid)} must be the monitor's child" }
    names = titles.values.map { |title| title.sub(/requests=\d+/, "requests=N") }.sort
    assert_equal ["herd mold (gen 0)", "herd worker 0 (gen 0) requests=N", "herd worker 1 (gen 0) requests=N"], names
    assert_equal "herd monitor", tree.title(@server.pid)
  end

  def test_sigkill_of_the_monitor_leaves_no_process_behind
    serve(args: ["-w", "2"])
    @server.ready
    children = @server.descendants
    Process.kill(:KILL, @server.pid)
    @server.wait
    Herd::Waiting.wait_until("the children gone", timeout: 10, detail: -> { "left behind: #{children.select { |pid| Herd::Procfs.alive?(pid) }}" }) do
      children.none? { |pid| Herd::Procfs.alive?(pid) }
    end
  end

  {"on the scoreboard" => {}, "over its link (no scoreboard slot)" => {"HERD_SCOREBOARD_SLOTS" => "0"}}.each do |how, env|
    define_method("test_a_stuck_worker_reporting_#{how}_is_killed_at_the_timeout_and_replaced") do
      stuck_worker_is_killed(env)
    end
  end

  def stuck_worker_is_killed(env)
    app = <<~RUBY
      run ->(env) { sleep 30 if env["PATH_INFO"].start_with?("/stuck"); [200, {}, ["ok \#{Process.pid}"]] }
    RUBY
    serve(app: app, args: ["-w", "1", "--timeout", "0.5"], env: env)
    @server.ready
    @server.get("/stuck?x=1")
    @server.wait_for(%r{worker 0 \(gen 0\), pid \d+ timed out after 0.5s on GET /stuck\?x=1; killing it})
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ was killed by SIGKILL/)
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ ready/, after: @server.mark - 1)
    assert_match(/ok \d+/, @server.get("/"))
  end

  def test_a_dead_worker_is_replaced
    serve(args: ["-w", "1"])
    first = Integer(@server.get("/")[/pid=(\d+)/, 1])
    Process.kill(:KILL, first)
    @server.wait_for(/worker 0 \(gen 0\), pid #{first} was killed by SIGKILL/)
    second = Integer(@server.get("/")[/pid=(\d+)/, 1])
    refute_equal first, second
  end

  # Pitchfork shuts the whole server down here; herd promotes a worker.
  def test_a_dead_mold_is_replaced_by_promoting_a_worker_and_serving_goes_on
    serve(args: ["-w", "1"])
    @server.ready
    mold = Integer(@server.wait_for(/mold \(gen 0\), pid (\d+) ready/)[1])
    Process.kill(:KILL, mold)
    @server.wait_for(/mold \(gen 0\), pid #{mold} was killed by SIGKILL/)
    assert_match(/200/, @server.get("/").lines.first)
    @server.wait_for(/refork \(the mold is gone\): promoting worker 0 \(gen 0\)/)
    @server.wait_for(/mold \(gen 1\), pid \d+ ready/)
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    assert_match(/200/, @server.get("/").lines.first)
  end

  # With no worker fit to promote, the monitor boots a fresh mold from
  # config.ru; the unsafe worker serves until the new generation replaces it.
  def test_a_dead_mold_with_no_fork_safe_worker_is_replaced_by_a_fresh_one
    serve(app: Herd::ServerHarness::FORK_UNSAFE_APP, args: ["-w", "1"])
    @server.make_worker_unsafe
    mold = Integer(@server.wait_for(/mold \(gen 0\), pid (\d+) ready/)[1])
    Process.kill(:KILL, mold)
    @server.wait_for(/mold \(gen 0\), pid #{mold} was killed by SIGKILL/)
    assert_match(/200/, @server.get("/").lines.first)
    @server.wait_for(/mold \(gen 1\) spawned as pid \d+/)
    @server.wait_for(/mold \(gen 1\), pid \d+ ready/)
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ exited with status 0/)
    refute(@server.lines.any? { |line| line.include?("promoting") }, @server.lines.join)
    assert_match(/200/, @server.get("/").lines.first)
  end

  def test_without_a_subreaper_the_monitor_forks_workers_itself
    serve(args: ["-w", "2", "--no-subreaper"])
    assert_match(/200/, @server.get("/").lines.first)
    @server.wait_for(/no child subreaper .*plain preload/)
    assert_equal 2, @server.descendants.size
  end

  def test_orphans_adopted_by_the_monitor_are_reaped
    app = <<~RUBY
      run ->(env) {
        middle = fork { fork { exit!(0) }; exit!(0) } # the grandchild is orphaned: the monitor adopts it
        Process.wait(middle)
        [200, {}, ["ok"]]
      }
    RUBY
    serve(app: app, args: ["-w", "1"])
    @server.get("/")
    @server.wait_for(/reaped pid \d+ \(exited with status 0\), not one of ours/)
  end

  # spawn_timeout also bounds the mold's boot: 5 s leaves a loaded machine room to load the app.
  def test_a_worker_not_ready_within_spawn_timeout_is_killed_and_retried
    config = <<~RUBY
      workers 1
      spawn_timeout 5
      after_fork do |server, worker|
        unless File.exist?("slow-once")
          File.write("slow-once", "")
          sleep 30
        end
      end
    RUBY
    serve(config: config)
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ was not ready within spawn_timeout \(5s\); killing it/)
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ was killed by SIGKILL/)
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ ready/)
    assert_match(/200/, @server.get("/").lines.first)
  end
end
