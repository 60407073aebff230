# frozen_string_literal: true

require "test_helper"

# `rake test:slow` (many pool calls). A long-lived process (a Rails request,
# a Sidekiq job, a rake task) that calls Herd.map again and again, with ordinary garbage in between, must
# not grow: whatever a call's heap preparation keeps for its workers
# (sealed malloc chunks, free-slot fillers) is given back once they are gone.
# A process this small would skip the preparation (Pool::HeapPolicy), so
# the script asks for it with a Hash of options.
class PoolRepeatedCallsSlowTest < Herd::Test
  # Prints "baseline final" RSS in KiB, after `warmup` calls and after `calls` more.
  SCRIPT = <<~RUBY
    require "herd"
    calls, warmup = ARGV.map { |arg| Integer(arg) }
    rss = -> { File.read("/proc/self/status")[/^VmRSS:\\s+(\\d+)/, 1].to_i }
    $kept = Array.new(100_000) { |i| "a string the process keeps, number \#{i}" }
    call = lambda do |n|
      churn = Array.new(10_000) { |i| "garbage of call \#{n}, \#{i} " * (1 + i % 7) }
      raise "wrong" unless Herd.map(1..20, processes: 2, prepare_heap: {}) { |i| i * 2 }.sum == 420
      churn.clear
    end
    warmup.times { |n| call.call(n) }
    baseline = rss.call
    calls.times { |n| call.call(warmup + n) }
    puts "\#{baseline} \#{rss.call}"
  RUBY

  def self.test_timeout
    1800
  end

  # @return [Array(Integer, Integer)] RSS in KiB after the warm-up and at the end
  def rss_over(calls, warmup: 5)
    out, err, status = ruby_run(SCRIPT, calls.to_s, warmup.to_s)
    assert status.success?, err
    out.split.map { |kib| Integer(kib) }
  end

  def test_rss_stays_within_ten_percent_over_repeated_calls
    baseline, final = rss_over(20)
    assert_operator final, :<=, baseline * 1.10, "RSS #{baseline / 1024} MiB -> #{final / 1024} MiB over 20 calls"
  end

  # The issue's bound, over 1,000 calls (several minutes on 2 cores).
  def test_rss_stays_within_ten_percent_over_a_thousand_calls
    baseline, final = rss_over(1000)
    assert_operator final, :<=, baseline * 1.10, "RSS #{baseline / 1024} MiB -> #{final / 1024} MiB over 1,000 calls"
  end
end
