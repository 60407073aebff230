# frozen_string_literal: true

require "open3"

module CowBench
  # ApacheBench (ab), as Pitchfork's benchmark warms its app: `ab -c 4 -n 500`.
  class Ab
    INSTALL_HINT = "ab (ApacheBench) not found: apt-get update && apt-get install -y apache2-utils"

    # @return [String, nil] ab's version line, nil when ab is missing
    def self.version
      out, status = Open3.capture2e("ab", "-V")
      status.success? ? out[/Version [^\s,]+/] : nil
    rescue SystemCallError
      nil
    end

    def initialize(concurrency:, timeout: 120)
      @concurrency = concurrency
      @timeout = timeout
    end

    def command(url = "URL", requests = "N")
      %W[ab -q -c #{@concurrency} -n #{requests} -s #{@timeout} #{url}]
    end

    # @return [Hash] :requests, :failed, :non_2xx, :rps, :seconds; :error when ab failed
    def run(url, requests)
      out, status = Open3.capture2e(*command(url, requests))
      number = ->(label) { out[/^#{label}:\s+([\d.]+)/, 1]&.to_f }
      result = {requests: number.call("Complete requests").to_i, failed: number.call("Failed requests").to_i,
                non_2xx: number.call("Non-2xx responses").to_i, rps: number.call("Requests per second")&.round(1),
                seconds: number.call("Time taken for tests")&.round(1)}
      result[:error] = out.lines.last(5).join.strip unless status.success? && result[:requests] == requests
      result
    end
  end
end
