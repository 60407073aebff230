# frozen_string_literal: true

require "net/http"

module CowBench
  # The reading an app like Pitchfork's example reports in its response
  # (bench/cow/measuring.ru): Σ PSS of the worker's parent and its children,
  # and the worker's own PSS, taken inside the request.
  module Inside
    TOTAL = /Total Cluster Memory Usage: ([\d.]+) MiB/
    WORKER = /Single Worker Memory Usage: ([\d.]+) MiB/

    # @return [Hash] :total_pss and :worker_pss in MiB, or :error
    def self.read(url)
      body = Net::HTTP.get(URI(url))
      total = body[TOTAL, 1]
      return {error: "no reading in the response: #{body[0, 200].inspect}"} unless total

      {total_pss: Float(total), worker_pss: Float(body[WORKER, 1])}
    rescue SystemCallError, IOError, Net::ReadTimeout => e
      {error: "#{e.class}: #{e.message}"}
    end
  end
end
