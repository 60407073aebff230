# frozen_string_literal: true

require "test_helper"

class PoolRehearsalTest < Herd::Test
  def descriptors
    Dir.children("/proc/self/fd").size
  end

  # In a child of its own, as if it had not rehearsed yet (this test
  # process may have): the rehearsal runs once per process.
  def test_the_rehearsal_leaves_nothing_behind_and_runs_once_per_process
    result = in_child do
      Herd::Pool::Rehearsal.instance_variable_set(:@done, false)
      before = descriptors
      runs = 0
      counting = Module.new do
        define_method(:run) do
          runs += 1
          super()
        end
      end
      Herd::Pool::Rehearsal.singleton_class.prepend(counting)
      2.times { Herd::Pool::Rehearsal.once }
      [runs, descriptors - before, Herd.worker_number, Herd.map([1, 2], processes: 2) { |i| i * 2 }]
    end
    assert_equal [1, 0, nil, [2, 4]], result
  end
end
