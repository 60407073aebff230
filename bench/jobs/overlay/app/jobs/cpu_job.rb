# frozen_string_literal: true

# CPU-bound Ruby: records built, sorted and folded, primes sieved. No I/O,
# no lock: what more processes (not threads) speed up.
class CpuJob < BenchJob
  def perform(index, rows = 4_000, limit = 40_000)
    records = Array.new(rows) { |i| {id: i, score: (i * 7919 + index) % 1000, name: "row #{i}"} }
    sorted = records.sort_by { |record| [-record[:score], record[:id]] }
    folded = sorted.each_with_object(Hash.new(0)) { |record, sums| sums[record[:score] % 17] += record[:id] }
    sieve = Array.new(limit + 1, true)
    (2..Integer.sqrt(limit)).each { |n| (n * n).step(limit, n) { |m| sieve[m] = false } if sieve[n] }
    folded.values.sum + sieve.count(true)
  end
end
