# frozen_string_literal: true

# Slow clients without a proxy in front (slowloris): 4 normal clients
# (a new connection per request, as wrk against a Connection: close server)
# against 2 workers, first alone, then while 50 connections each send one
# header byte per second and reconnect once answered or closed.
#
#   bundle exec ruby bench/slow_clients.rb [--reps N] [--duration S] [--read-timeout S] [--only herd,unicorn]
#
# Figures: the normal clients' requests/s under attack as a share of their
# requests/s alone, and what the slow connections got (status, seconds from
# connect to answer). Unicorn (optional bench group) shows the hole herd
# closes: it has no read timeout and serves connections in accept order.
# Writes bench/results/slow_clients.md and .json.

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "optparse"
require "tmpdir"
require "herd/version"
require_relative "http/servers"
require_relative "http/server_process"

module SlowClientsBench
  HOST = HttpBench::HOST
  APP = File.join(__dir__, "http", "hello.ru")
  REQUEST = "GET / HTTP/1.1\r\nHost: #{HOST}\r\n\r\n"
  SLOW_START = "GET / HTTP/1.1\r\nHost: #{HOST}\r\nX-Slow: "

  module_function

  # The normal clients: each opens a connection, sends a request, reads the
  # whole response, again, for `seconds`.
  # @return [Hash] :requests, :errors, :per_second
  def normal_clients(port, clients, seconds)
    deadline = Bench::Clock.now + seconds
    counts = Array.new(clients) do
      Thread.new do
        done = errors = 0
        while Bench::Clock.now < deadline
          begin
            socket = Socket.tcp(HOST, port, connect_timeout: 5)
            socket.write(REQUEST)
            response = socket.wait_readable([deadline - Bench::Clock.now, 0.001].max) && socket.read
            next unless response # the window ended first: not counted

            response.start_with?("HTTP/1.1 200") ? done += 1 : errors += 1
          rescue SystemCallError, IOError
            errors += 1
          ensure
            socket&.close
          end
        end
        [done, errors]
      end
    end.map(&:value)
    requests = counts.sum(&:first)
    {requests: requests, errors: counts.sum(&:last), per_second: requests / seconds.to_f}
  end

  # Slow connections: one header byte per second each; answered or closed,
  # they reconnect (the attacker keeps the pressure).
  class Slowloris
    attr_reader :answers

    def initialize(port, count)
      @port = port
      @count = count
      @answers = [] # [status or "closed", seconds from connect]
      @stop = false
    end

    def start
      @sockets = Array.new(@count) { connect }
      @thread = Thread.new { run }
      self
    end

    def stop
      @stop = true
      @thread.join
      @sockets.each { |(socket, _)| socket.close }
    end

    private

    def connect
      socket = Socket.tcp(HOST, @port, connect_timeout: 5)
      socket.write(SLOW_START)
      [socket, Bench::Clock.now, +""]
    end

    def run
      until @stop
        tick = Bench::Clock.now + 1
        @sockets.map! { |entry| drip(entry) }
        while (left = tick - Bench::Clock.now) > 0 && !@stop
          ready, = IO.select(@sockets.map(&:first), nil, nil, left)
          ready&.each { |socket| collect(@sockets.index { |entry| entry[0] == socket }) }
        end
      end
    end

    def drip(entry)
      entry[0].write_nonblock("a", exception: false)
      entry
    rescue SystemCallError, IOError
      finish(entry, "reset")
    end

    def collect(index)
      entry = @sockets[index]
      data = entry[0].read_nonblock(4096, exception: false)
      return if data == :wait_readable

      if data.is_a?(String)
        entry[2] << data
        return unless entry[2].include?("\r\n\r\n")
      end
      @sockets[index] = finish(entry, entry[2][/\AHTTP\/1\.1 (\d{3})/, 1] || "closed")
    rescue SystemCallError, IOError
      @sockets[index] = finish(entry, "reset")
    end

    def finish(entry, status)
      @answers << [status, Bench::Clock.now - entry[1]]
      entry[0].close
      connect
    end
  end

  def measure(server, reps:, duration:, logs:)
    Array.new(reps) do |rep|
      process = HttpBench::ServerProcess.new(server, app: APP, path: "/", log_path: File.join(logs, "#{server.name}-#{rep}.log")).start
      begin
        normal_clients(process.port, 4, 2) # warm-up
        alone = normal_clients(process.port, 4, duration)
        slowloris = Slowloris.new(process.port, 50).start
        attacked = normal_clients(process.port, 4, duration)
        slowloris.stop
        {rep: rep + 1, alone: alone, attacked: attacked, share: attacked[:per_second] / alone[:per_second],
         slow_answers: slowloris.answers}
      ensure
        process.stop
      end
    end
  end
end

command = Bench::Report.command_line($PROGRAM_NAME, ARGV)
options = {reps: 3, duration: 20, read_timeout: 5, only: %w[herd unicorn]}
OptionParser.new do |opts|
  opts.on("--reps N", Integer, "repetitions (default 3)") { |n| options[:reps] = n }
  opts.on("--duration SECONDS", Integer, "each measured window (default 20)") { |s| options[:duration] = s }
  opts.on("--read-timeout SECONDS", Integer, "herd's read_timeout (default 5)") { |s| options[:read_timeout] = s }
  opts.on("--only LIST", Array, "servers (herd, unicorn)") { |list| options[:only] = list }
end.parse!

results = {}
Dir.mktmpdir("bench-slow") do |dir|
  config = File.join(dir, "herd.rb")
  File.write(config, "http read_timeout: #{options[:read_timeout]}\n")
  herd = HttpBench::SERVERS.find { |s| s.name == "herd" }.dup
  herd.argv = ->(app, _port) { %W[bundle exec herd serve #{app} -w 2 -l #{HttpBench::HOST}:0 -c #{config}] }
  servers = [herd, *HttpBench::SERVERS.select { |s| s.name == "unicorn" }].select { |s| options[:only].include?(s.name) }
  servers.each do |server|
    next warn("#{server.name}: skipped: #{server.missing}") if server.missing

    warn "#{server.name}..."
    results[server.name] = SlowClientsBench.measure(server, reps: options[:reps], duration: options[:duration], logs: dir)
  end
end

rows = results.map do |name, reps|
  answers = reps.flat_map { |rep| rep[:slow_answers] }
  by_status = answers.group_by(&:first).map { |status, list| "#{status}: #{list.size} (median #{Bench::Stats.median(list.map(&:last)).round(1)} s)" }
  [name, Bench::Stats.median(reps.map { |r| r[:alone][:per_second] }).round(1),
    Bench::Stats.median(reps.map { |r| r[:attacked][:per_second] }).round(1),
    Bench::Stats.range(Bench::Stats.summary(reps.map { |r| r[:share] }), "%.2f"),
    reps.sum { |r| r[:attacked][:errors] }, by_status.join("; ").then { |s| s.empty? ? "none" : s }]
end
per_rep = results.flat_map do |name, reps|
  reps.map { |r| [name, r[:rep], r[:alone][:requests], r[:attacked][:requests], format("%.2f", r[:share]), r[:slow_answers].size] }
end
env = Bench::Report.environment(command).merge(loadavg_end: Bench::Report.loadavg)
markdown = <<~MD
  # Slow clients (slowloris) without a proxy

  #{Bench::Report.environment_markdown(env)}- load average at the end: #{env[:loadavg_end]} (2 cores, shared with other work: absolute
    figures are noisy, the share under attack is the figure)

  2 workers each, hello-world app (bench/http/hello.ru), everything on 127.0.0.1. herd: `http read_timeout:
  #{options[:read_timeout]}`, default `max_pending_heads` (64). 4 normal clients (Ruby threads: connect, request,
  read to EOF, again) for #{options[:duration]} s alone, then #{options[:duration]} s while 50 slow connections each send
  `GET / HTTP/1.1`, Host and a header name at once, then one byte per second, reconnecting once answered or closed.
  Medians over #{options[:reps]} repetitions, server started afresh for each. Required (issue #19): share under
  attack ≥ 0.50, slow connections answered 408 after read_timeout.

  #{Bench::Report.markdown_table(["server", "normal req/s alone", "normal req/s under attack", "share (min–max)", "normal errors", "slow connections: answer (seconds from connect)"], rows)}
  ### Every repetition

  #{Bench::Report.markdown_table(["server", "rep", "normal requests alone", "under attack", "share", "slow answers"], per_rep)}
MD
paths = Bench::Report.write("slow_clients", markdown: markdown, data: {environment: env, options: options, results: results})
warn "wrote #{paths.join(" and ")}"
