# frozen_string_literal: true

require "test_helper"
require "herd/server"
require "support/server_harness"

class ServerReforkTest < Herd::Test
  include Herd::ServerTest

  def self.test_timeout
    120
  end

  def test_usr2_reforks_generation_after_generation_and_every_process_stays_a_child_of_the_monitor
    serve(args: ["-w", "2"])
    2.times { @server.get("/") }
    (1..3).each do |generation|
      refork_to(generation, workers: 2)
      promoted = Integer(@server.lines.grep(/promoting worker \d \(gen #{generation - 1}\)/).last[/promoting worker (\d)/, 1])
      @server.wait_for(/mold \(gen #{generation - 1}\), pid \d+ exited with status 0/)
      # The promoted worker became the mold; each other one is replaced
      # (with the default surge, once its replacement is ready).
      ([0, 1] - [promoted]).each do |number|
        @server.wait_for(/worker #{number} \(gen #{generation - 1}\), pid \d+ exited with status 0/)
      end
    end
    @server.wait_for(/refork \(USR2\): promoting worker \d \(gen 2\)/)
    assert_equal [[@server.pid, "herd mold (gen 3)"], [@server.pid, "herd worker 0 (gen 3)"], [@server.pid, "herd worker 1 (gen 3)"]],
      titles.sort
    assert_match(/200/, @server.get("/").lines.first)
  end

  # The mold that booted the app compacts; the promoted ones descend from
  # it and compact only once the live objects grew (`compact: :auto`). The
  # GCs run at nice 10 by default (Config#heap_nice), compaction included;
  # a Hash of options without `nice:` keeps that.
  def test_the_booted_mold_compacts_the_promoted_ones_when_the_heap_grew
    skip "no GC.compact in this Ruby" unless GC.respond_to?(:compact)
    serve(args: ["-w", "1"], config: "prepare_heap compact: :auto")
    booted = @server.wait_for(/mold \(gen 0\): heap prepared.*/)[0]
    assert_match(/\+ compaction/, booted)
    assert_match(/; GCs at nice 10, /, booted) unless Herd::Heap::LowPriority.unsupported_reason
    [1, 2].each do |generation|
      @server.get("/")
      refork_to(generation)
      assert_match(/, compaction not needed \(\+\d+\.\d% live objects since the last/,
        @server.wait_for(/mold \(gen #{generation}\): heap prepared.*/)[0])
    end
  end

  # A worker whose first request builds a cache larger than a tenth of the
  # heap: the mold promoted from it compacts again, the next one not.
  def test_a_promoted_mold_compacts_when_the_heap_grew_since_the_last_compaction
    skip "no GC.compact in this Ruby" unless GC.respond_to?(:compact)
    app = <<~RUBY
      CACHE = []
      run ->(env) { CACHE.concat(Array.new(GC.stat(:heap_live_slots) / 4) { |i| "entry \#{i}" }) if CACHE.empty?; [200, {}, ["ok\n"]] }
    RUBY
    serve(app: app, args: ["-w", "1"])
    assert_match(/\+ compaction/, @server.wait_for(/mold \(gen 0\): heap prepared.*/)[0])
    @server.get("/")
    refork_to(1)
    assert_match(/\+ compaction/, @server.wait_for(/mold \(gen 1\): heap prepared.*/)[0])
    @server.get("/")
    refork_to(2)
    assert_match(/, compaction not needed/, @server.wait_for(/mold \(gen 2\): heap prepared.*/)[0])
  end

  # `prepare_heap compact: true`: every promoted mold compacts.
  def test_compact_true_compacts_every_promoted_mold
    skip "no GC.compact in this Ruby" unless GC.respond_to?(:compact)
    serve(args: ["-w", "1"], config: "prepare_heap compact: true")
    @server.wait_for(/mold \(gen 0\): heap prepared/)
    [1, 2].each do |generation|
      @server.get("/")
      refork_to(generation)
      assert_match(/\+ compaction/, @server.wait_for(/mold \(gen #{generation}\): heap prepared.*/)[0])
    end
  end

  # Herd.close_all_ios! in the hooks, as docs/FORK_SAFETY.md suggests,
  # closes the app's inherited descriptors, never the server's own (links,
  # listeners, the log), in the first mold, a promoted one and workers.
  def test_close_all_ios_in_the_hooks_spares_the_servers_own_descriptors
    app = <<~RUBY
      APP_FILE = File.open(__FILE__)
      run ->(env) { [200, {}, ["app file closed: \#{APP_FILE.closed?}\n"]] }
    RUBY
    config = <<~RUBY
      workers 1
      after_mold_fork { |*| Herd.close_all_ios! }
      after_fork { |*| Herd.close_all_ios! }
    RUBY
    serve(app: app, config: config)
    assert_match(/app file closed: true/, @server.get("/"))
    refork_to(1)
    assert_match(/app file closed: true/, @server.get("/"))
    refork_to(2)
    assert_match(/app file closed: true/, @server.get("/"))
    refute(@server.lines.any? { |line| line.match?(/crashed|failed|closed stream/) }, @server.lines.join)
  end

  def test_herd_refork_asks_a_running_monitor
    serve(args: ["-w", "1"])
    out, err, status = herd_cli("refork", @server.pid.to_s)
    assert status.success?, err
    assert_match(/asked herd monitor #{@server.pid} to refork/, out)
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    _, err, status = herd_cli("refork", Process.pid.to_s)
    assert_equal 1, status.exitstatus
    assert_match(/is ".*", not a herd monitor/, err)
  end

  # Where the workers run YJIT (RUBY_YJIT_ENABLE=1, the matrix's primary
  # entry), the refork due at 3 requests waits until 4 x 3; without YJIT
  # nothing waits.
  def test_refork_yjit_wait_holds_a_scheduled_refork_while_yjit_compiles
    serve(config: "workers 1\nrefork_after [3]\nrefork_yjit_wait 4\n")
    3.times { @server.get("/") }
    if defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?
      @server.wait_for(/refork due \(3 requests\) waits for YJIT to stop compiling in a worker \(refork_yjit_wait: up to 12 requests\)/)
      9.times { @server.get("/") }
      @server.wait_for(/refork \(12 requests\): promoting worker 0 \(gen 0\)/)
    else
      @server.wait_for(/refork \(3 requests\): promoting worker 0 \(gen 0\)/)
      refute(@server.lines.any? { |line| line.include?("waits for YJIT") })
    end
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
  end

  def test_refork_after_counts_requests_per_generation
    serve(config: "workers 1\nrefork_after [3, 5]\n")
    # The first mold leaves malloc's free chunks to its workers' warm-up;
    # the molds after it seal them.
    @server.wait_for(/mold \(gen 0\): heap prepared .*; malloc's free pages given back, its free chunks left free/)
    3.times { @server.get("/") }
    @server.wait_for(/refork \(3 requests\): promoting worker 0 \(gen 0\)/)
    @server.wait_for(/mold \(gen 1\): heap prepared .*; \d+ malloc free chunks sealed/)
    @server.wait_for(/worker 0 \(gen 1\), pid \d+ ready/)
    # The old worker serves until its replacement is ready (rollout_max_surge), then leaves.
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ exited with status 0/)
    5.times { @server.get("/") }
    @server.wait_for(/refork \(5 requests\): promoting worker 0 \(gen 1\)/)
    @server.wait_for(/worker 0 \(gen 2\), pid \d+ ready/)
  end

  def test_a_fork_unsafe_worker_is_never_promoted
    serve(app: Herd::ServerHarness::FORK_UNSAFE_APP, args: ["-w", "1"])
    @server.make_worker_unsafe
    @server.signal("USR2")
    @server.wait_for(/refork \(USR2\): no fork-safe worker to promote; generation 0 keeps serving/)
    refute(@server.lines.any? { |line| line.include?("promoting") })
  end

  def test_a_new_mold_that_crashes_while_booting_is_retried_and_the_old_generation_keeps_serving
    config = <<~RUBY
      workers 1
      after_mold_fork do |server, mold|
        if mold.generation == 1
          File.write("crashed", "")
          exit!(3)
        end
      end
    RUBY
    serve(config: config)
    @server.signal("USR2")
    @server.wait_for(/refork to generation 1 failed \(exited with status 3\); generation 0 keeps serving; next attempt in/)
    assert_match(/200/, @server.get("/").lines.first)
    @server.signal("USR2")
    @server.wait_for(/mold \(gen 2\), pid \d+ ready/)
    @server.wait_for(/worker 0 \(gen 2\), pid \d+ ready/)
  end

  %w[QUIT TERM].each do |signal|
    define_method("test_#{signal}_during_a_refork_stops_every_process") do
      serve(args: ["-w", "2"])
      @server.signal("USR2")
      @server.wait_for(/refork \(USR2\): promoting worker/)
      @server.signal(signal)
      assert_equal 0, @server.wait.exitstatus
      @server.wait_for(/#{signal}: graceful stop/)
      @server.wait_for(/monitor: stopped/)
      assert_empty @server.processes_left, "processes left in herd's process group"
    end
  end
end
