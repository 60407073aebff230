# frozen_string_literal: true

require "json"
require "open3"
require "rbconfig"
require "herd/cluster/ruby_gc_defaults"
require_relative "../http/server_process"
require_relative "ab"
require_relative "tree"
require_relative "inside"
require_relative "recorder"

module CowBench
  # inside: the app reports the cluster's memory in its responses, as
  # Pitchfork's example does; the driver reads it too.
  App = Struct.new(:name, :rackup, :description, :inside, keyword_init: true)

  APPS = [
    App.new(name: "constant", rackup: "bench/cow/constant_caches.ru",
      description: "Pitchfork's constant-cache app: 100,000 constants and lookup methods defined at boot, all called by every request"),
    App.new(name: "measuring", rackup: "bench/cow/measuring.ru", inside: true,
      description: "Pitchfork's example app as its benchmark runs it: the constant-cache app that first reads the " \
        "cluster's memory from /proc in every request (about 1,000 objects allocated per request) and answers with it"),
    App.new(name: "lazy", rackup: "bench/cow/lazy_caches.ru",
      description: "class-level data memoized on first use (200 x 1,000 records), a 20,000-entry YAML file parsed on first use, " \
        "5,000 classes called from the same call sites")
  ].freeze

  # Log lines that mark a refork, per server.
  REFORK_LINES = {"herd" => /refork \(.*promoting/, "pitchfork" => /refork condition met/,
                  "puma-fork_worker" => /Starting worker refork/}.freeze
  # Log lines kept with every run: reforks and herd's heap preparation.
  EVENTS = /refork|promot|heap prepared/i

  # Each repetition measures the floor, then starts every server afresh,
  # warms it with ab, waits for its rollout to settle and measures its tree;
  # servers are interleaved and their order rotates each round. Every
  # process's PSS is recorded every 0.25 s from the warm-up's first request
  # to the last measurement (Recorder), for the plot.
  class Runner
    EARLY = 3 # seconds after ab, as in Pitchfork's benchmark/cow_benchmark.rb
    MORE_ROUNDS = 3
    def initialize(servers:, apps:, reps:, requests:, more:, ab:, logs:, progress:)
      @servers = servers
      @apps = apps
      @reps = reps
      @requests = requests
      @more = more
      @ab = ab
      @logs = logs
      @progress = progress
    end

    # @return [Hash] :runs (one per server, app and repetition), :floors (one per app and repetition)
    def call
      runs = []
      floors = []
      (1..@reps).each do |rep|
        @apps.each do |app|
          floors << floor(app, rep).tap { |floor| @progress.floor(floor) }
          @servers.rotate(rep - 1).each { |server| runs << measure(server, app, rep).tap { |run| @progress.run(run) } }
        end
      end
      {runs: runs, floors: floors}
    end

    private

    # One warmed process alone, and forks of it that served one request
    # (bench/cow/floor.rb), in a fresh Ruby with the GC settings herd gives
    # its own processes.
    def floor(app, rep)
      argv = [RbConfig.ruby, File.join(__dir__, "floor.rb"), app.rackup, (@requests / WORKERS).to_s, WORKERS.to_s,
        [@more, 1].max.to_s]
      out, err, status = Open3.capture3({"RACK_ENV" => "production", **Herd::Cluster::RubyGCDefaults::DEFAULTS}, *argv, chdir: HttpBench::ROOT)
      return {app: app.name, rep: rep, error: err.lines.last(5).join} unless status.success?

      {app: app.name, rep: rep, **JSON.parse(out.lines.last, symbolize_names: true)}
    end

    def measure(server, app, rep)
      result = {server: server.name, app: app.name, rep: rep}
      process = HttpBench::ServerProcess.new(server.http, app: app.rackup, path: "/",
        log_path: File.join(@logs, "#{server.name}-#{app.name}-#{rep}.log"))
      process.start
      result[:boot_s] = process.boot_seconds.round(1)
      tree = Tree.new(server, process)
      recorder = Recorder.new(server, process).start
      result.merge!(warm_up(tree, process, app, recorder))
      result[:more] = steady(server, tree, process, recorder) if @more.positive?
      result
    rescue HttpBench::ServerProcess::Failed => e
      result.merge!(error: e.message)
    ensure
      result.merge!(recorder.stop) if recorder
      stopped(result, server, process)
    end

    # ab; a first look 3 s later as Pitchfork's own benchmark takes it
    # (without waiting for a rollout): one request to an app that reports
    # its own reading, and from outside; then wait for the rollout and measure.
    def warm_up(tree, process, app, recorder)
      load = @ab.run(process.url, @requests)
      recorder.phase("ab")
      sleep EARLY
      inside = Inside.read(process.url) if app.inside
      early = tree.measure
      settle = tree.settle
      recorder.phase("settled")
      {ab: load, inside: inside, early: {total_pss: early[:total_pss], processes: early[:processes]},
       settle: settle, memory: tree.measure}.compact
    end

    # @more requests at a time until a round goes by without a refork (at
    # most MORE_ROUNDS), so that the generation measured has served @more
    # requests itself; settle and measure.
    def steady(server, tree, process, recorder)
      rounds = (1..MORE_ROUNDS).each_with_object([]) do |_, done|
        before = reforks(server, process)
        load = @ab.run(process.url, @more)
        recorder.phase("more ab")
        done << {ab: load, settle: tree.settle, reforks: reforks(server, process) - before}
        recorder.phase("more settled")
        break done if done.last[:reforks].zero?
      end
      last = rounds.last
      {ab: last[:ab], settle: last[:settle], rounds: rounds.size, requests: rounds.sum { |round| round[:ab][:requests] },
       steady: last[:reforks].zero?, memory: tree.measure}
    end

    def reforks(server, process)
      pattern = REFORK_LINES.find { |name, _| server.name.start_with?(name) }&.last
      pattern ? process.log_tail(100_000).scan(pattern).size : 0
    end

    # Stops the server; keeps the end of its log when anything looked wrong.
    def stopped(result, server, process)
      return unless process

      result[:reforks] = reforks(server, process) if REFORK_LINES.any? { |name, _| server.name.start_with?(name) }
      result[:events] = process.log_tail(100_000).lines.grep(EVENTS).map { |line| line.strip[0, 300] }
      problems = process.stop
      result[:stop_problems] = problems unless problems.empty?
      settled = [result, result[:more]].compact.all? { |phase| phase.dig(:settle, :settled) }
      result[:log_tail] = process.log_tail(40) unless problems.empty? && settled && !result[:error]
    end
  end
end
