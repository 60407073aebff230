# frozen_string_literal: true

require_relative "../test_helper"
require "herd/process_cost"

class ProcessCostTest < Minitest::Test
  def test_counts_the_page_faults_a_step_takes
    # 8 MiB written for the first time: at least a fault per 4 KiB page the
    # kernel hands out (fewer with huge pages, so a loose bound).
    value, cost = Herd::ProcessCost.measure { "x" * (8 << 20) }
    assert_equal 8 << 20, value.bytesize
    text = cost.to_s
    assert_match(/\A\d+ ms; \d+ ms CPU, \d+ page faults\z/, text)
    assert_operator text[/(\d+) page faults/, 1].to_i, :>, 0
  end

  def test_cpu_time_is_this_process_s
    _, cost = Herd::ProcessCost.measure { sleep 0.05 }
    wall, cpu = cost.to_s.scan(/(\d+) ms/).flatten.map(&:to_i)
    assert_operator wall, :>=, 50
    assert_operator cpu, :<, wall
  end

  def test_without_proc_it_leaves_the_faults_out
    cost = Herd::ProcessCost.allocate
    def cost.faults_now = nil
    cost.send(:initialize)
    assert_match(/\A\d+ ms; \d+ ms CPU\z/, cost.finish.to_s)
  end
end
