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
    @children = Herd::Server::Children.new
    context = Herd::Server::Context.new(config: Herd::Server::Config.new, log: Herd::Server::Log.new(@out))
    @deadlines = Herd::Server::Deadlines.new(children: @children, context: context, workload: Workload.new)
  end

  # A child without a pid is not signalled: enforce hands it to the block.
  def mold(state: :spawning, started: 0)
    @children.add(Herd::Server::Child.new(role: :mold, generation: 1, state: state, spawned_at: Herd::Clock.now - started))
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
end
