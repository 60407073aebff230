# frozen_string_literal: true

require "test_helper"

# Herd::Pool::Workers: a pool's workers, and what a call's run loop asks of
# them. The Pool itself shows users only what docs/API.md lists.
class PoolWorkersTest < Herd::Test
  WORKERS = Herd::Pool::Workers
  JOB = ->(item) { item }

  def settings(**options)
    Herd::Pool::PoolSettings.build(prepare_heap: false, **options)
  end

  def test_the_pool_shows_users_only_its_documented_methods
    assert_equal %i[all? any? close closed? each each_with_index filter_map flat_map kind map map_with_index pids size terminate],
      Herd::Pool.public_instance_methods(false).sort
    assert_equal %i[open], Herd::Pool.singleton_class.public_instance_methods(false)
  end

  def test_a_pools_workers_are_forked_at_start_and_reaped_at_close
    workers = WORKERS.new(settings(processes: 2), job: JOB).start
    pids = workers.pids
    assert_equal 2, pids.size
    refute workers.one_call?
    refute workers.retires?
    workers.close
    assert workers.closed?
    pids.each { |pid| assert_raises(Errno::ECHILD) { Process.waitpid(pid, Process::WNOHANG) } }
    workers.close # idempotent
  end

  def test_one_call_workers_are_as_many_as_the_items_and_wait_for_their_first_batch
    source = Herd::Pool::Source.for([1, 2])
    workers = WORKERS.one_call(source, JOB, {processes: 4, prepare_heap: false})
    assert_equal 2, workers.size
    assert_empty workers.pids, "forked by their first batch"
    assert workers.one_call?
    assert workers.retires?
    assert workers.forked_with?(source)
    refute workers.forked_with?(Herd::Pool::Source.for([1, 2]))
    idle = workers.idle({})
    assert_equal 2, idle.size
    assert(idle.all? { |worker| workers.unforked?(worker) })
  ensure
    workers&.terminate
  end

  def test_quota_counts_down_to_max_items_per_worker
    workers = WORKERS.new(settings(processes: 0, max_items_per_worker: 3), job: JOB).start
    worker = workers.idle({}).first
    assert workers.recycles?
    assert_equal 3, workers.quota(worker)
    workers.served(worker, 2)
    assert_equal 1, workers.quota(worker)
  ensure
    workers&.close
  end

  def test_without_max_items_per_worker_the_quota_is_unbounded
    workers = WORKERS.new(settings(threads: 1), job: JOB).start
    refute workers.recycles?
    assert_equal Float::INFINITY, workers.quota(workers.idle({}).first)
  ensure
    workers&.close
  end
end
