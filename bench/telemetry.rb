# frozen_string_literal: true

# Does the control endpoint cost the request path anything? herd serve with
# 2 workers on bench/http/hello.ru under wrk, in four variants started
# afresh per repetition, interleaved, order rotating:
#
#   off             no control_listen (no sampler thread, no control thread)
#   control, idle   control_listen on a UNIX socket, never asked
#   /stats 1/s      GET /stats every second during the measured run
#   /metrics 1/s    GET /metrics every second during the measured run
#
#   bundle exec ruby bench/telemetry.rb [--reps N] [--duration S]
#
# Needs wrk (apt-get install wrk). Writes bench/results/telemetry.md and .json.

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "optparse"
require "socket"
require "tmpdir"
require "herd/version"
require_relative "http/servers"
require_relative "http/server_process"
require_relative "http/wrk"

command = Bench::Report.command_line($PROGRAM_NAME, ARGV)
options = {reps: 5, duration: 10, warmup: 2}
OptionParser.new do |opts|
  opts.on("--reps N", Integer, "repetitions per variant (default 5, at least 3)") { |n| options[:reps] = [n, 3].max }
  opts.on("--duration SECONDS", Integer, "each measured wrk run (default 10)") { |s| options[:duration] = s }
end.parse!
abort "bench/telemetry: #{HttpBench::Wrk::INSTALL_HINT}" unless HttpBench::Wrk.version

# A poller: GET path on the control socket every second, each answer timed.
class Poller
  def initialize(socket_path, path)
    @socket_path = socket_path
    @path = path
    @latencies = []
  end

  attr_reader :latencies

  def start
    @thread = Thread.new do
      loop do
        started = Bench::Clock.now
        UNIXSocket.open(@socket_path) do |socket|
          socket.write("GET #{@path} HTTP/1.1\r\nHost: herd\r\n\r\n")
          raise "#{@path}: #{socket.gets}" unless socket.read.start_with?("HTTP/1.1 200")
        end
        @latencies << (Bench::Clock.now - started) * 1000
        sleep [1 - (Bench::Clock.now - started), 0].max
      end
    end
  end

  def stop
    @thread&.kill&.join
  end
end

Variant = Struct.new(:name, :control, :poll, keyword_init: true)
VARIANTS = [
  Variant.new(name: "off", control: false),
  Variant.new(name: "control, idle", control: true),
  Variant.new(name: "/stats 1/s", control: true, poll: "/stats"),
  Variant.new(name: "/metrics 1/s", control: true, poll: "/metrics")
].freeze

hello = File.join(HttpBench::CONFIG, "hello.ru")
wrk = HttpBench::Wrk.new(threads: 2, connections: 8, duration: options[:duration])
env = Bench::Report.environment(command).merge(wrk: HttpBench::Wrk.version, wrk_command: wrk.command.join(" "),
  loadavg_start: Bench::Report.loadavg)
runs = []
partial = File.join(Bench::Report::RESULTS, "telemetry-partial.json") # every run so far, should a later one fail
Dir.mktmpdir("bench-telemetry") do |dir|
  options[:reps].times do |rep|
    VARIANTS.rotate(rep).each do |variant|
      socket = File.join(dir, "control-#{rep}.sock")
      config = File.join(dir, "herd-#{rep}.rb")
      File.write(config, variant.control ? "control_listen \"unix:#{socket}\"\n" : "")
      server = HttpBench::Server.new(name: "herd", port: :zero, stop: "QUIT",
        ready: /ready: \d+ workers serving http:\/\/127\.0\.0\.1:(\d+)/,
        argv: ->(app, _port) { %W[bundle exec herd serve #{app} -w 2 -l #{HttpBench::HOST}:0 -c #{config}] })
      process = HttpBench::ServerProcess.new(server, app: hello, path: "/", log_path: File.join(dir, "log-#{rep}")).start
      begin
        wrk.warm(process.url, options[:warmup])
        poller = variant.poll && Poller.new(socket, variant.poll).tap(&:start)
        monitor_cpu = -> { Bench::Processes.stat("/proc/#{process.pid}/stat")[:cpu] }
        cpu_before = monitor_cpu.call
        workers_before = process.cpu[:workers]
        result = wrk.run(process.url)
        monitor_us = (monitor_cpu.call - cpu_before) * 1e6 / result[:requests]
        workers_us = (process.cpu[:workers] - workers_before) * 1e6 / result[:requests]
        poller&.stop
        warn format("rep %d %-14s %8.0f req/s  p99 %.2f ms  workers %.1f µs/req  monitor %.2f µs/req%s", rep + 1, variant.name,
          result[:rps], result[:latency_us][:p99] / 1000.0, workers_us, monitor_us,
          poller ? format("  %s median %.2f ms", variant.poll, Bench::Stats.median(poller.latencies)) : "")
        runs << {variant: variant.name, rep: rep + 1, rps: result[:rps], p99_ms: result[:latency_us][:p99] / 1000.0,
                 errors: result[:errors].values.sum, workers_cpu_us_per_request: workers_us, monitor_cpu_us_per_request: monitor_us,
                 polls: poller&.latencies&.size, poll_ms: poller&.latencies}
        File.write(partial, JSON.generate(runs))
      ensure
        poller&.stop
        process.stop
      end
    end
  end
end
env[:loadavg_end] = Bench::Report.loadavg

rows = VARIANTS.map do |variant|
  mine = runs.select { |run| run[:variant] == variant.name }
  rps = Bench::Stats.summary(mine.map { |run| run[:rps] })
  base = Bench::Stats.median(runs.select { |run| run[:variant] == "off" }.map { |run| run[:rps] })
  p99 = Bench::Stats.summary(mine.map { |run| run[:p99_ms] })
  polls = mine.flat_map { |run| run[:poll_ms] || [] }
  [variant.name, Bench::Stats.range(rps, "%.0f"), format("%.3fx", rps[:median] / base),
    Bench::Stats.range(p99, "%.2f"),
    format("%.1f", Bench::Stats.median(mine.map { |run| run[:workers_cpu_us_per_request] })),
    format("%.2f", Bench::Stats.median(mine.map { |run| run[:monitor_cpu_us_per_request] })),
    polls.empty? ? "-" : format("%.2f (max %.2f, n=%d)", Bench::Stats.median(polls), polls.max, polls.size),
    mine.sum { |run| run[:errors] }]
end
markdown = <<~MD
  # Telemetry: does polling the control endpoint slow the request path?

  #{Bench::Report.environment_markdown(env)}- wrk #{env[:wrk]}: `#{env[:wrk_command]}` after a #{options[:warmup]} s warm-up (discarded)
  - load average at start: #{env[:loadavg_start]}, at end: #{env[:loadavg_end]}. The machine (2 cores) was
    shared with other agents' work during the run: compare variants within this run only.

  herd serve, 2 workers, `bench/http/hello.ru`, one server started afresh per repetition and variant,
  variants interleaved with the order rotating. Medians over #{options[:reps]} repetitions (min–max).
  "workers CPU" and "monitor CPU" are the user + system CPU of the workers and of the monitor during
  the measured run, divided by the requests served (the sampler thread and the control endpoint run in
  the monitor; the workers are the request path). "poll latency" is the time
  for one `GET` on the control socket, measured by the poller.

  #{Bench::Report.markdown_table(["variant", "req/s", "vs off", "p99 ms", "workers CPU µs/req", "monitor CPU µs/req", "poll latency ms", "errors"], rows)}
MD
paths = Bench::Report.write("telemetry", markdown: markdown, data: {environment: env, runs: runs})
FileUtils.rm_f(partial)
warn "wrote #{paths.join(" and ")}"
