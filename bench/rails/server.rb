# frozen_string_literal: true

require_relative "app"
require_relative "../cow/servers" # the role of each process, from its title
require_relative "../support/clock"
require_relative "../support/http_probe"
require_relative "../support/ksm"
require_relative "../support/processes"
require_relative "../support/server_process"

module RailsBench
  CONFIG = File.join(__dir__, "config")

  # One server setup: how to start it in the app's directory and stop it.
  #   env: more environment (herd's variants)
  Server = Struct.new(:name, :gem, :config, :argv, :stop, :role, :env, :description, keyword_init: true) do
    def config_path = File.join(CONFIG, config)
  end

  def self.herd(name, options = nil, description: nil, env: {})
    Server.new(name: name, gem: "herd", config: "herd.rb", stop: "QUIT", role: CowBench::HERD_ROLE,
      env: (options ? {"HERD_BENCH_OPTIONS" => options} : {}).merge(env),
      description: description || "refork_after [50, 100, 1000]; warmup#{"; #{options}" if options}",
      argv: ->(port, config) { %W[bundle exec herd serve config.ru -c #{config} -l 127.0.0.1:#{port}] })
  end

  # The same server with the kernel's same-page merging asked for on every
  # process (bench/support/ksm_exec.rb), as systemd's MemoryKSM=yes would.
  def self.with_ksm(server)
    server.dup.tap do |ksm|
      ksm.name = "#{server.name}-ksm"
      ksm.argv = ->(port, config) { Bench::KSM.wrap(server.argv.call(port, config)) }
      ksm.description = "#{server.description}; KSM asked for on every process (prctl PR_SET_MEMORY_MERGE, as systemd's MemoryKSM=yes)"
    end
  end

  SERVERS = [
    herd("herd"),
    Server.new(name: "pitchfork", gem: "pitchfork", config: "pitchfork.rb", stop: "QUIT", role: CowBench::PITCHFORK_ROLE, env: {},
      description: "refork_after [50, 100, 1000]",
      argv: ->(_port, config) { %W[bundle exec pitchfork -c #{config} config.ru] }),
    Server.new(name: "puma", gem: "puma", config: "puma.rb", stop: "TERM", role: CowBench::PUMA_ROLE, env: {},
      description: "cluster, preload_app!, threads 1, 1",
      argv: ->(_port, config) { %W[bundle exec puma -C #{config} config.ru] }),
    Server.new(name: "puma-fork_worker", gem: "puma", config: "puma_fork_worker.rb", stop: "TERM", role: CowBench::PUMA_ROLE,
      env: {}, description: "fork_worker (1000), threads 1, 1",
      argv: ->(_port, config) { %W[bundle exec puma -C #{config} config.ru] })
  ].freeze

  # herd's documented settings tried on top of the default config (--variants).
  VARIANTS = [
    herd("herd-no_compact", "prepare_heap compact: false"),
    herd("herd-compact", "prepare_heap compact: true",
      description: "prepare_heap compact: true (every promoted mold compacts, herd's default before compact: :auto)"),
    herd("herd-compact_boot", "prepare_heap compact: :auto",
      description: "prepare_heap compact: :auto (the booted mold compacts too; promoted molds when the heap grew)"),
    herd("herd-no_major_gc", "prepare_heap major_gc_when_due: false",
      description: "prepare_heap major_gc_when_due: false (no promoted mold runs the major GC due in its workers)"),
    herd("herd-seal_first", "prepare_heap seal_malloc: true",
      description: "prepare_heap seal_malloc: true (the first mold seals malloc's free chunks too, as job workers' do)"),
    herd("herd-no_room", "prepare_heap room: false",
      description: "prepare_heap room: false (no empty heap pages for the workers, in the molds or in the workers)"),
    herd("herd-nice10", "prepare_heap nice: 10",
      description: "prepare_heap nice: 10 (a mold's preparation GCs at nice 10, in a thread of their own)"),
    herd("herd-nice0", "prepare_heap nice: 0",
      description: "prepare_heap nice: 0 (a mold's preparation at the workers' own priority, as job workers do)"),
    herd("herd-refork_early", "refork_after [25, 50, 1000]",
      description: "refork_after [25, 50, 1000] (the first two reforks twice as early)"),
    herd("herd-max_unavailable2", "rollout_max_unavailable 2"),
    herd("herd-surge", "rollout_max_surge 1; rollout_max_unavailable 0",
      description: "rollout_max_surge 1, rollout_max_unavailable 0 (each replacement forked before the worker it replaces stops)"),
    herd("herd-surge_nice10", "rollout_max_surge 1; rollout_max_unavailable 0; prepare_heap nice: 10",
      description: "rollout_max_surge 1, rollout_max_unavailable 0, prepare_heap nice: 10 (and the replacements' warm-ups at nice 10)"),
    herd("herd-no_oobgc", "out_of_band_gc false"),
    herd("herd-ksm", "ksm true", description: "refork_after [50, 100, 1000]; warmup; ksm true (the kernel may merge identical pages)"),
    herd("herd-min_ratio20", env: {"RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO" => "0.20"},
      description: "Ruby's own RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO (0.20), which herd lowers to 0.10 on Ruby 3.4"),
    herd("herd-yjit_cold", env: {"RUBYOPT" => "--yjit-cold-threshold=1000000000"},
      description: "YJIT compiles every method once past its call threshold (120 calls past 40,000 ISEQs, as in the Rails 8 app), " \
        "however late (--yjit-cold-threshold=1000000000)"),
    herd("herd-yjit_wait", "refork_yjit_wait 4",
      description: "refork_yjit_wait 4 (a refork due waits, up to 4 x the count, for a worker whose YJIT stopped compiling)"),
    herd("herd-yjit_cold_wait", "refork_yjit_wait 4", env: {"RUBYOPT" => "--yjit-cold-threshold=1000000000"},
      description: "refork_yjit_wait 4 and --yjit-cold-threshold=1000000000"),
    herd("herd-oobgc20k", "out_of_band_gc 20_000"),
    herd("herd-oobgc10k", "out_of_band_gc 10_000"),
    herd("herd-oobgc5k", "out_of_band_gc 5_000"),
    herd("herd-oobgc100k", "out_of_band_gc 100_000"),
    herd("herd-refork1000", "refork_after [1000]", description: "refork_after [1000] (every 1,000 requests of the busiest worker)"),
    herd("herd-no_refork", "refork_after false", description: "refork_after false (no reforking: workers forked from the first mold)"),
    herd("herd-no_rack_autoloads", env: {"HERD_RACK_AUTOLOADS" => "0"},
      description: "HERD_RACK_AUTOLOADS=0 (Rack::Multipart left to Rack: each worker loads it on its first POST)"),
    herd("herd-no_refork_no_rack_autoloads", "refork_after false", env: {"HERD_RACK_AUTOLOADS" => "0"},
      description: "refork_after false, HERD_RACK_AUTOLOADS=0"),
    herd("herd-no_warmup", env: {"BENCH_NO_WARMUP" => "1"},
      description: "refork_after [50, 100, 1000], no warmup (herd's documented config before warmup existed)"),
    # Memory-driven reforks (docs/TELEMETRY.md): measured sharing instead of request counts.
    herd("herd-refork_when60", "refork_after false; refork_when shared_below: 0.6",
      description: "refork_when shared_below: 0.6 (no refork_after: reforks when the workers' shared fraction falls below 60%)"),
    herd("herd-refork_when75", "refork_after false; refork_when shared_below: 0.75",
      description: "refork_when shared_below: 0.75 (no refork_after)")
  ].freeze
  # The peers as an operator could run them with systemd's MemoryKSM=yes.
  KSM_PEERS = SERVERS.reject { |server| server.gem == "herd" }.map { |server| with_ksm(server) }.freeze

  # The lines of a log file written after an offset, minus the Rails
  # request log (lines that start "I, [", "W, [", ...), read as the file
  # grows; a partial last line waits for its newline.
  class LogFollower
    APP_LINE = /\A[IWDEF], \[/

    def initialize(path, offset)
      @path = path
      @offset = offset
      @partial = +""
      @text = +""
    end

    # @return [String] every server line since the offset
    def read
      File.open(@path) do |file|
        file.seek(@offset)
        chunk = file.read
        @offset += chunk.bytesize
        lines = (@partial << chunk).lines
        @partial = lines.last&.end_with?("\n") ? +"" : (lines.pop || +"")
        lines.each { |line| @text << line unless line.match?(APP_LINE) }
      end
      @text
    rescue SystemCallError
      @text
    end
  end

  # A setup of SERVERS running (Bench::ServerProcess) in a copy of the app,
  # ready once /things answers 200 and its workers have settled.
  class Running
    BOOT_TIMEOUT = 120
    SETTLE_TIMEOUT = 60
    STOP_TIMEOUT = 30

    attr_reader :port, :log_path, :boot_seconds

    def initialize(server, dir:, workers:, log_path:)
      @server = server
      @dir = dir
      @workers = workers
      @log_path = log_path
    end

    # Starts it; returns once an HTTP request to /things got a 200 and the
    # server runs its workers, nothing forking, for a second.
    def start(path: "/things")
      started = Bench::Clock.now
      @port = Bench::HttpProbe.free_port
      env = RailsBench.env("BENCH_PORT" => @port.to_s, "BENCH_WORKERS" => @workers.to_s).merge(@server.env)
      @process = Bench::ServerProcess.new(@server.name, @server.argv.call(@port, @server.config_path), env: env,
        chdir: @dir, log_path: @log_path)
      probe = nil
      @process.start(timeout: BOOT_TIMEOUT, awaiting: -> { "200 on #{path} (#{probe.inspect})" }, every: 0.1) do
        (probe = Bench::HttpProbe.get(@port, path)) && probe[:status] == 200
      end
      settle
      @boot_seconds = (Bench::Clock.now - started).round(1)
      self
    end

    def pid = @process&.pid

    # @return [Array<Hash>] the server's processes with :role and :generation
    def processes
      Bench::Processes.of(pid).map do |process|
        role, generation = @server.role.call(process[:title])
        process.merge(role: role, generation: generation)
      end
    end

    def log = @process ? @process.log : ""

    def log_tail(lines = 20) = @process ? @process.log_tail(lines) : ""

    # The server's own lines appended to the log from now on, read
    # incrementally. Polling the whole log instead (it holds the app's
    # request log too, megabytes by the time of a refork) took the driver
    # 0.9 s of CPU in the 3 s after a USR2, a third of it in page faults, on
    # the two cores the server was measured on: the window that holds the
    # refork lost that much to the driver and the steady phase did not.
    # @return [LogFollower]
    def follow_log
      LogFollower.new(@log_path, File.size?(@log_path) || 0)
    end

    # Graceful stop, then SIGKILL to what is left of it.
    # @return [Array<String>] problems
    def stop
      @process ? @process.stop(@server.stop, timeout: STOP_TIMEOUT) : []
    end

    private

    def settle
      deadline = Bench::Clock.now + SETTLE_TIMEOUT
      stable_since = nil
      signature = nil
      loop do
        current = processes
        workers = current.count { |process| process[:role] == :worker }
        transient = current.count { |process| process[:role] == :transient }
        now = Bench::Clock.now
        key = current.map { |process| process[:pid] }.sort
        stable_since = now if workers != @workers || transient.positive? || key != signature
        signature = key
        return if now - stable_since >= 1.0
        raise "#{@server.name}: #{workers} workers, #{transient} forking after #{SETTLE_TIMEOUT} s\n#{log_tail}" if now > deadline

        sleep 0.1
      end
    end
  end
end
