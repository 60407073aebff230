# frozen_string_literal: true

require_relative "server_process"
require_relative "wrk"

module HttpBench
  App = Struct.new(:name, :rackup, :path, :description, keyword_init: true)

  APPS = [
    App.new(name: "hello", rackup: "bench/http/hello.ru", path: "/",
      description: "hello world: 14-byte text/plain body"),
    App.new(name: "shop", rackup: "bench/http/shop.ru", path: "/products?page=2",
      description: "router + Rack::Request + ERB layout and table of 160 products: ~51 KB of HTML")
  ].freeze

  # Every repetition starts each server afresh, warms it, measures it and
  # stops it; servers are interleaved and their order rotates each round.
  #
  # The machine may be shared: a run during which other processes used more
  # than `max_other_cpu` cores is done again (at most RETRIES times, and
  # RETRY_BUDGET times in all, which keeps the whole run under ~10 minutes);
  # the disturbed attempts stay in the measurement's :disturbed_attempts.
  class Runner
    RETRIES = 2
    RETRY_BUDGET = 8

    def initialize(servers:, apps:, reps:, wrk:, warmup:, logs:, max_other_cpu:)
      @servers = servers
      @apps = apps
      @reps = reps
      @wrk = wrk
      @warmup = warmup
      @logs = logs
      @max_other_cpu = max_other_cpu
      @retries_left = RETRY_BUDGET
    end

    # @return [Array<Hash>] one measurement per server, app and repetition
    def call
      (1..@reps).flat_map do |rep|
        @apps.flat_map do |app|
          @servers.rotate(rep - 1).map { |server| settled(server, app, rep) }
        end
      end
    end

    private

    def settled(server, app, rep)
      disturbed = []
      loop do
        m = measure(server, app, rep).tap { |result| progress(result) }
        return m.merge(disturbed_attempts: disturbed) if m[:error] || m[:other_cpu] <= @max_other_cpu
        return m.merge(disturbed: true, disturbed_attempts: disturbed) if disturbed.size == RETRIES || @retries_left.zero?

        @retries_left -= 1
        warn format("    other processes used %.2f cores (> %.2f): again", m[:other_cpu], @max_other_cpu)
        disturbed << m.slice(:rps, :latency_us, :other_cpu, :loadavg)
      end
    end

    def measure(server, app, rep)
      result = {server: server.name, app: app.name, rep: rep}
      process = ServerProcess.new(server, app: app.rackup, path: app.path,
        log_path: File.join(@logs, "#{server.name}-#{app.name}-#{rep}.log"))
      process.start
      result[:boot_s] = process.boot_seconds.round(2)
      result[:keep_alive] = process.probe[:keep_alive]
      @wrk.warm(process.url, @warmup)
      result.merge!(load(process))
      result[:alive_after] = Bench::HttpProbe.get(process.port, app.path)&.fetch(:status)
      result
    rescue ServerProcess::Failed, RuntimeError => e
      result.merge!(error: e.message)
    ensure
      stopped(result, process)
    end

    # Stops the server; keeps the end of its log when anything looked wrong.
    def stopped(result, process)
      return unless process

      problems = process.stop
      result[:exit] = process.status&.inspect
      result[:stop_problems] = problems unless problems.empty?
      suspicious = !problems.empty? || !process.clean_exit? || result[:alive_after] != 200 ||
        result[:errors]&.values&.sum.to_i.positive?
      result[:log_tail] = process.log_tail(40) if suspicious
    end

    def load(process)
      busy = Bench::Processes.system_busy
      before = process.cpu
      run = @wrk.run(process.url)
      after = process.cpu
      busy = Bench::Processes.system_busy - busy
      per_request = ->(key) { ((after[key] - before[key]) / run[:requests] * 1e6).round(1) }
      ours = after[:workers] + after[:others] - before[:workers] - before[:others] + run[:wrk_cpu]
      run.merge(loadavg: Bench::Report.loadavg, processes: after[:processes],
        other_cpu: ((busy - ours) / (run[:duration_us] / 1e6)).round(2), # cores busy with anything else
        cpu_us_per_request: {workers: per_request.call(:workers), others: per_request.call(:others),
                             wrk: (run[:wrk_cpu] / run[:requests] * 1e6).round(1)})
    end

    def progress(m)
      line = format("  rep %d %-5s %-9s ", m[:rep], m[:app], m[:server])
      line += if m[:error]
        "FAILED: #{m[:error].lines.first}"
      else
        format("%8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  errors %d  other CPU %.2f cores",
          m[:rps], m[:latency_us][:p50] / 1e3, m[:latency_us][:p99] / 1e3, m[:errors].values.sum, m[:other_cpu])
      end
      line += "  (stop: #{m[:stop_problems].join("; ")})" if m[:stop_problems]
      line += "  (exit: #{m[:exit]}; server log kept in the JSON)" if m[:log_tail]
      warn line
    end
  end
end
