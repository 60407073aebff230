# frozen_string_literal: true

require_relative "../http/servers"

module CowBench
  WORKERS = 4
  CONFIG = __dir__

  # One server setup measured by bench/cow.rb.
  #   http:      how to start and stop it (HttpBench::Server: argv, port, ready line, stop signal)
  #   config:    its config file, for the results
  #   role:      process title -> [role, generation] (:monitor, :mold, :worker, :transient) or nil
  #   log_check: (log text, processes) -> nil when the log agrees the rollout is over, else why not
  #   log_generation: log text -> the generation, for servers whose titles do not show it
  Server = Struct.new(:name, :http, :config, :role, :log_check, :log_generation, keyword_init: true) do
    def version = http.version

    def missing = http.missing
  end

  def self.server(name, gem:, config:, argv:, role:, port: :free, ready: nil, stop: "QUIT", log_check: nil, log_generation: nil)
    http = HttpBench::Server.new(name: name, gem: gem, port: port, ready: ready, stop: stop,
      argv: ->(app, port_number) { argv.call(app, port_number, "#{CONFIG}/#{config}") })
    Server.new(name: name, http: http, config: "bench/cow/#{config}", role: role, log_check: log_check,
      log_generation: log_generation)
  end

  # herd's log says when a mold and each worker are ready: every live worker
  # and the mold must have said so, and no promotion may be under way.
  HERD_LOG = lambda do |log, processes|
    promoted = log.scan(/promoting .* to mold \(gen (\d+)\)/).flatten.map(&:to_i).max || 0
    done = log.scan(/mold \(gen (\d+)\), pid \d+ ready|refork to generation (\d+) failed/).flatten.compact.map(&:to_i).max || 0
    return "promotion to gen #{promoted} under way" if promoted > done

    ready = log.scan(/(?:mold|worker \d+) \(gen \d+\), pid (\d+) ready/).flatten.map(&:to_i)
    waiting = processes.map { |process| process[:pid] } - ready
    "not ready yet: pids #{waiting.join(", ")}" unless waiting.empty?
  end

  HERD_ROLE = lambda do |title|
    case title
    when /\Aherd monitor/ then [:monitor, nil]
    when /\Aherd mold \(gen (\d+)\)/ then [:mold, $1.to_i]
    when /\Aherd worker \d+ \(gen (\d+)\)/ then [:worker, $1.to_i]
    else [:transient, nil] # the middle process of a double fork
    end
  end

  PITCHFORK_ROLE = lambda do |title|
    case title
    when /\Apitchfork monitor/ then [:monitor, nil]
    when /(?:init|booting|spawning mold)\s*\z/, /fork_sibling/ then [:transient, nil]
    when /\(gen:(\d+)\) mold/ then [:mold, $1.to_i]
    when /\(gen:(\d+)\) worker\[\d+\]/ then [:worker, $1.to_i]
    else [:transient, nil]
    end
  end

  PUMA_ROLE = ->(title) { title.include?("cluster worker") ? [:worker, nil] : [:monitor, nil] }
  UNICORN_ROLE = ->(title) { title.start_with?("unicorn worker") ? [:worker, nil] : [:monitor, nil] }

  # Puma logs the refork phase and each worker booted in it (worker 0, the
  # one the others are forked from, keeps its phase-0 boot).
  PUMA_LOG = lambda do |log, processes|
    phase = puma_phase(log)
    booted = log.scan(/Worker (\d+) \(PID: (\d+)\) booted in [\d.]+s, phase: (\d+)/).to_h do |index, pid, at|
      [pid.to_i, index == "0" || at.to_i == phase]
    end
    waiting = processes.map { |process| process[:pid] }.reject { |pid| booted[pid] }
    "phase #{phase}: not booted yet: pids #{waiting.join(", ")}" unless waiting.empty?
  end

  def self.puma_phase(log)
    log.scan(/Starting worker refork, phase: (\d+)/).flatten.map(&:to_i).max || 0
  end

  # @param env [Array<String>] NAME=value settings for Ruby (read at its start)
  # @param command [Array<String>] what runs herd
  def self.herd(name, config, env: [], command: %w[bundle exec herd])
    server(name, gem: nil, config: config, port: :zero, ready: /ready: \d+ workers serving http:\/\/127\.0\.0\.1:(\d+)/,
      argv: lambda { |app, _port, path|
        (env.empty? ? [] : ["env", *env]) + command + %W[serve #{app} -c #{path} -l #{HttpBench::HOST}:0]
      },
      role: HERD_ROLE, log_check: HERD_LOG)
  end

  # @param env [Array<String>] NAME=value settings for Ruby (read at its start)
  def self.pitchfork(name, env: [])
    server(name, gem: "pitchfork", config: "pitchfork.rb", role: PITCHFORK_ROLE,
      argv: ->(app, _port, path) { (env.empty? ? [] : ["env", *env]) + %W[bundle exec pitchfork -c #{path} #{app}] })
  end

  def self.puma(name, config, **options)
    server(name, gem: "puma", config: config, stop: "TERM", role: PUMA_ROLE,
      argv: ->(app, _port, path) { %W[bundle exec puma -C #{path} #{app}] }, **options)
  end

  SERVERS = [
    herd("herd", "herd.rb"),
    herd("herd-ruby-gc", "herd_ruby_gc.rb", env: %w[RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO=0.65]),
    herd("herd-oobgc100k", "herd_oobgc100k.rb"),
    herd("herd-seal_first", "herd_seal_first.rb"),
    herd("herd-compact_boot", "herd_compact_boot.rb"),
    pitchfork("pitchfork"),
    pitchfork("pitchfork-gc", env: %w[RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO=0.25]),
    puma("puma-fork_worker", "puma_fork_worker.rb", log_check: PUMA_LOG, log_generation: method(:puma_phase)),
    puma("puma", "puma.rb"),
    server("unicorn", gem: "unicorn", config: "unicorn.rb", role: UNICORN_ROLE,
      argv: ->(app, _port, path) { %W[bundle exec unicorn -c #{path} #{app}] })
  ].freeze

  # SERVERS, with herd at git revision `ref` (--baseline REF) after herd, as herd@REF, with herd's config.
  # @param baseline [Bench::Baseline, nil] where that herd is; nil when only its results are read
  def self.servers(ref = nil, baseline: nil)
    return SERVERS unless ref

    SERVERS.dup.insert(1, herd("herd@#{ref}", "herd.rb", command: baseline&.command))
  end
end
