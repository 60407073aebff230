# frozen_string_literal: true

require "test_helper"
require "herd/server"

# What the monitor does with a child's messages that only move its clocks.
class MonitorMessagesTest < Herd::Test
  def setup
    @monitor = Herd::Server::Monitor.new(Herd::Server::Config.new, log: Herd::Server::Log.new(StringIO.new))
  end

  def message(child, *message)
    @monitor.send(:on_message, child, message)
  end

  # A mold's heap preparation runs at a lower priority and may take long on
  # a busy machine: it gets a spawn_timeout of its own, counted from when
  # it starts, not from the fork.
  def test_a_mold_starting_its_heap_preparation_gets_a_spawn_timeout_of_its_own
    long_ago = Herd::Clock.now - 25
    mold = Herd::Server::Child.new(role: :mold, generation: 1, pid: 1234, state: :spawning, spawned_at: long_ago)
    message(mold, :preparing)
    assert_in_delta Herd::Clock.now, mold.spawned_at, 5
    assert_equal :spawning, mold.state
  end

  def test_a_late_preparing_message_moves_no_clock_of_a_child_past_spawning
    long_ago = Herd::Clock.now - 25
    %i[ready stopping].each do |state|
      mold = Herd::Server::Child.new(role: :mold, generation: 1, pid: 1234, state: state, spawned_at: long_ago)
      message(mold, :preparing)
      assert_equal [state, long_ago], [mold.state, mold.spawned_at]
    end
  end
end
