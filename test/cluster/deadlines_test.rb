# frozen_string_literal: true

require "test_helper"
require "stringio"
require "herd/server"

# The monitor's spawn clock, and the longer one of a mold's heap preparation.
class DeadlinesTest < Herd::Test
  Workload = Struct.new(:none) do
    def overdue(_child, _timeout) = nil
  end

  def setup
    @out = StringIO.new
    @children = Herd::Cluster::Children.new
    context = Herd::Cluster::Context.new(config: Herd::Server::Config.new, log: Herd::Cluster::Log.new(@out))
    @deadlines = Herd::Cluster::Deadlines.new(children: @children, context: context, workload: Workload.new,
      service: Herd::Server::Service.new)
  end

  # A child without a pid is not signalled: enforce hands it to the block.
  def mold(state: :spawning, started: 0)
    @children.add(Herd::Cluster::Child.new(role: :mold, generation: 1, state: state, spawned_at: Herd::Clock.now - started))
  end

  def killed
    list = []
    @deadlines.enforce { |child| list << child }
    list
  end

  def test_a_mold_not_ready_within_spawn_timeout_is_killed
    late = mold(started: 31)
    mold(started: 29)
    assert_equal [late], killed
    assert_match(/mold \(gen 1\) was not ready within spawn_timeout \(30s\); killing it/, @out.string)
  end

  # Its preparation runs at a lower priority and may wait long for the CPU
  # on a busy machine: it gets three spawn_timeouts, counted from its start.
  def test_a_mold_preparing_its_heap_gets_three_spawn_timeouts_from_the_start_of_it
    preparing = mold(started: 29)
    @deadlines.preparing(preparing)
    assert_empty killed
    preparing.spawned_at = Herd::Clock.now - 89
    assert_empty killed
    preparing.spawned_at = Herd::Clock.now - 91
    assert_equal [preparing], killed
    assert_match(/mold \(gen 1\) did not finish preparing its heap within 3 x spawn_timeout \(90s\); killing it/, @out.string)
  end

  def test_a_late_preparing_message_moves_no_clock_of_a_child_past_spawning
    %i[ready stopping].each do |state|
      child = mold(state: state, started: 25)
      started = child.spawned_at
      @deadlines.preparing(child)
      assert_equal [started, nil], [child.spawned_at, child.spawn_budget]
    end
  end

  # A surge replacement warming up at prepare_heap's nice value gets the
  # budget a mold's preparation gets (Spawner#warm_up_budget).
  def test_a_worker_with_a_spawn_budget_is_told_why
    config = Herd::Server::Config.new
    worker = @children.add(Herd::Cluster::Child.new(role: :worker, number: 0, generation: 1, state: :spawning,
      spawned_at: Herd::Clock.now - 91, spawn_budget: config.spawn_timeout * 3))
    assert_equal [worker], killed
    assert_equal :spawn_timeout, worker.killed
    assert_match(/worker 0 \(gen 1\) was not ready within 3 x spawn_timeout \(90s; it warms up at a lower priority\); killing it/,
      @out.string)
  end

  # A worker told to stop finishes its request within `timeout` too (a
  # surge rollout stops old workers mid-request); once killed, it is not
  # killed again while the monitor waits to reap it.
  def test_a_stopping_worker_past_timeout_is_killed_once
    deadlines = Herd::Cluster::Deadlines.new(children: @children, workload: Herd::Cluster::Workload.new(nil),
      service: Herd::Server::Service.new, context: Herd::Cluster::Context.new(config: Herd::Server::Config.new, log: Herd::Cluster::Log.new(@out)))
    stuck = @children.add(Herd::Cluster::Child.new(role: :worker, number: 1, generation: 0, state: :stopping,
      busy_since: Herd::Clock.now - 31, busy_with: "GET /stuck"))
    @children.add(Herd::Cluster::Child.new(role: :worker, number: 0, generation: 0, state: :stopping,
      busy_since: Herd::Clock.now - 29, busy_with: "GET /slow"))
    deadlines.enforce { nil }
    stuck.busy_since = Herd::Clock.now - 31 # as a scoreboard slot still says, until the reap
    deadlines.enforce { nil }
    assert_equal :timeout, stuck.killed
    assert_equal 1, @out.string.scan("worker 1 (gen 0) timed out after 30s on GET /stuck; killing it").size, @out.string
    refute_match(/slow/, @out.string)
  end
end
