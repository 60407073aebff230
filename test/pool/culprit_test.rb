# frozen_string_literal: true

require "test_helper"

# Which item a dead worker was on: the item_board's word, read before the
# slot is handed to the replacement (which marks it idle).
class PoolCulpritTest < Herd::Test
  def test_worker_died_names_the_item_that_killed_it_wherever_it_is_in_its_batch
    5.times do
      error = assert_raises(Herd::WorkerDied) do
        # Cheap items grow the batches past one item, so 37 is rarely first in its batch.
        Herd.map(1..100, processes: 2) { |i| (i == 37) ? Process.kill(:KILL, Process.pid) : i }
      end
      assert_equal 36, error.index, error.message
      assert_match(/while working on item 36 \(37\)/, error.message)
    end
  end

  def test_a_reused_pool_names_the_item_too_and_retries_from_it
    seen = []
    Herd::Pool.open(processes: 2, job: ->(i) { (i == 37) ? Process.kill(:KILL, Process.pid) : i }) do |pool|
      3.times do
        error = assert_raises(Herd::WorkerDied) { pool.map(1..100, chunk_size: 8) }
        seen << error.index
      end
    end
    assert_equal [36, 36, 36], seen
  end
end
