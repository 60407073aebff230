# frozen_string_literal: true

# Pitchfork's example app as its benchmark runs it: every request first reads
# the cluster's memory (bench/cow/cluster_memory.rb), then calls App.warmup,
# and answers with the reading. The driver fetches one response 3 s after
# the warm-up, as Pitchfork's benchmark/cow_benchmark.rb does.
require_relative "constant_app"
require_relative "cluster_memory"

run ->(_env) {
  body = ClusterMemory.report
  App.warmup
  [200, {"content-type" => "text/plain"}, [body]]
}
