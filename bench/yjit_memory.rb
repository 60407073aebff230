# frozen_string_literal: true

# Where a reforked worker's memory goes, per process and per kind of page, on the Ruby that runs this
# script, with YJIT on or off (issue 35, item 1).
#
#   export PATH=/root/.herd/rubies/3.4.5/bin:$PATH
#   ruby bench/yjit_memory.rb                          # every variant of this Ruby
#   ruby bench/yjit_memory.rb --only yjit,nojit --requests 200
#   /usr/bin/ruby bench/yjit_memory.rb --only nojit    # Ruby 3.1, the reference
#
# Each variant runs `herd serve examples/demo/config.ru` (herd demo's app: 20,000 constants and methods,
# all called on every request) with 4 workers and bench/yjit_memory/herd.rb, as herd demo does: N
# requests, USR2, N/2 requests. It reads the tree (Herd::Memory.tree) and classifies every resident
# page of the gen-1 mold and workers (bench/yjit_memory/maps.rb) at three moments: gen 0 warmed, gen 1
# ready (no request yet), gen 1 after its N/2 requests; each worker's pages of its own are compared with
# the mold's at the same address. The probes (bench/yjit_memory/probe.rb) record YJIT's and the GC's
# counters and the page faults inside each process at each step. One server at a time
# (Bench::ServerProcess), stopped (QUIT, then SIGKILL to what is left) before the next. Writes
# bench/results/yjit-memory-RUBY.json and prints tables.

require "json"
require "optparse"
require "rbconfig"
require "socket"
require "tmpdir"
require_relative "../lib/herd/memory"
require_relative "support/clock"
require_relative "support/server_process"
require_relative "support/units"
require_relative "yjit_memory/maps"

module YjitMemoryBench
  ROOT = File.expand_path("..", __dir__)
  APP = File.join(ROOT, "examples/demo/config.ru")
  CONFIG = File.join(ROOT, "bench/yjit_memory/herd.rb")
  HERD = File.join(ROOT, "exe/herd")
  YJIT = {"RUBY_YJIT_ENABLE" => "1"}.freeze
  READY = /ready: \d+ workers serving http:\/\/127\.0\.0\.1:(\d+)/
  BOOT_TIMEOUT = 120
  STOP_TIMEOUT = 60

  # name => environment of the server (nil unsets)
  VARIANTS = {
    "nojit" => {},
    "yjit" => YJIT,
    "yjit_no_oobgc" => YJIT.merge("YJIT_MEM_OOBGC" => "false"),
    "nojit_no_oobgc" => {"YJIT_MEM_OOBGC" => "false"},
    "yjit_no_prepare" => YJIT.merge("YJIT_MEM_PREPARE" => "false"),
    "yjit_after_fork" => {"YJIT_MEM_ENABLE" => "after_fork"},
    "yjit_threshold1" => YJIT.merge("RUBYOPT" => "--yjit-call-threshold=1"),
    # 30 calls whatever the ISEQ count (not 120 past 40,000 ISEQs), and no ISEQ left out as cold
    "yjit_no_cold" => YJIT.merge("RUBYOPT" => "--yjit-call-threshold=30 --yjit-cold-threshold=1000000000"),
    "yjit_no_fast_exit" => YJIT.merge("HERD_FAST_EXIT" => "0")
  }.freeze

  class Run
    attr_reader :result

    def initialize(name, env, requests:, workers:, refork_requests:)
      @name = name
      @env = env
      @requests = requests
      @refork_requests = refork_requests
      @workers = workers
      @result = {variant: name, env: env, requests: requests, refork_requests: refork_requests, snapshots: {}}
    end

    def call
      Dir.mktmpdir("yjit-memory") do |dir|
        @dir = dir
        start
        warm(@requests)
        snapshot("gen0")
        Process.kill(:USR2, @pid)
        wait_for_generation(1)
        snapshot("gen1_ready")
        warm(@refork_requests)
        sleep 1 # the workers' last between-request work (the out-of-band GC) is done
        snapshot("gen1_warm")
        @result[:probes] = probes
      ensure
        stop
      end
      @result
    end

    private

    def start = serve(APP)

    # herd serve on `app`, with the variant's environment over `env`; ready once its log says on which port.
    # Ruby 3.1 turns YJIT on for any value of RUBY_YJIT_ENABLE: unset it unless asked for.
    def serve(app, env = {})
      probe_dir = File.join(@dir, "probes")
      Dir.mkdir(probe_dir)
      env = {"YJIT_MEM_PROBE_DIR" => probe_dir, "YJIT_MEM_PIDFILE" => File.join(@dir, "herd.pid"),
             "RUBY_YJIT_ENABLE" => nil, "RUBYOPT" => nil}.merge(env, @env)
      @server = Bench::ServerProcess.new(@name, [RbConfig.ruby, "-I", File.join(ROOT, "lib"), HERD, "serve", app, "-c", CONFIG,
        "-w", @workers.to_s, "-l", "127.0.0.1:0"], env: env, chdir: ROOT, log_path: File.join(@dir, "herd.log"))
      @port = @server.start(timeout: BOOT_TIMEOUT, awaiting: "herd's ready line", every: 0.1) { READY.match(@server.log)&.[](1)&.to_i }
      @pid = @server.pid
      @result[:ruby] = `#{RbConfig.ruby} -v`.strip
    end

    def stop
      return unless @server

      @server.stop("QUIT", timeout: STOP_TIMEOUT).each { |problem| warn "#{@name}: #{problem}" }
      @result[:log_tail] = @server.log_tail(60).lines.map(&:chomp)
    end

    # Every worker of the tree is of this generation, one mold, the old mold gone.
    def wait_for_generation(generation, timeout: 120)
      deadline = Bench::Clock.now + timeout
      loop do
        titles = Herd::Memory.tree(@pid).rows.map(&:title)
        workers = titles.grep(/herd worker \d+ \(gen (\d+)\)/)
        molds = titles.grep(/herd mold/)
        if workers.size == @workers && workers.all? { |t| t.include?("(gen #{generation})") } && molds.size == 1 &&
            molds.first.include?("(gen #{generation})")
          sleep 0.5
          return
        end
        raise "generation #{generation} not settled: #{titles.inspect}" if Bench::Clock.now > deadline

        sleep 0.2
      end
    end

    def warm(requests)
      threads = Array.new(@workers) { Thread.new { (requests / @workers).times { get } } }
      threads.each(&:join)
    end

    def get
      TCPSocket.open("127.0.0.1", @port) do |socket|
        socket.write("GET / HTTP/1.1\r\nHost: demo\r\n\r\n")
        socket.read
      end
    end

    def snapshot(label)
      report = Herd::Memory.tree(@pid)
      rows = report.rows.map do |row|
        {pid: row.pid, title: row.title, rss: row.sample.rss, pss: row.sample.pss, uss: row.sample.uss,
         private_dirty: row.sample.private_dirty}
      end
      mold = rows.find { |row| row[:title].include?("herd mold") }
      heap_page = GC::INTERNAL_CONSTANTS.fetch(:HEAP_PAGE_SIZE, 16 << 10)
      rows.each do |row|
        next unless /herd (mold|worker)/.match?(row[:title])

        ref = row.equal?(mold) ? nil : mold&.fetch(:pid)
        row[:kinds] = YjitMemoryMaps.classify(row[:pid], heap_page_size: heap_page, ref_pid: ref)
      rescue SystemCallError => e
        row[:error] = "#{e.class}: #{e.message}"
      end
      @result[:snapshots][label] = {total_pss: report.total.pss, rows: rows}
    end

    def probes
      Dir[File.join(@dir, "probes", "*.jsonl")].to_h do |file|
        [File.basename(file, ".jsonl").to_i, File.readlines(file).map { |line| JSON.parse(line, symbolize_names: true) }]
      end
    end
  end

  extend Bench::Units # mib

  module_function

  def main(argv)
    options = {only: nil, requests: 200, refork_requests: nil, workers: 4, label: nil}
    OptionParser.new do |opts|
      opts.on("--only LIST", Array) { |list| options[:only] = list }
      opts.on("--requests N", Integer, "requests before the refork (herd demo: 200)") { |n| options[:requests] = n }
      opts.on("--refork-requests N", Integer, "requests after it (default: half)") { |n| options[:refork_requests] = n }
      opts.on("--workers N", Integer) { |n| options[:workers] = n }
      opts.on("--label LABEL", "results file name suffix") { |l| options[:label] = l }
    end.parse!(argv)
    names = options[:only] || VARIANTS.keys
    names = names.reject { |name| name.start_with?("yjit") } unless defined?(RubyVM::YJIT)
    label = options[:label] || "#{RUBY_VERSION}#{"-" + options[:only].join("_") if options[:only]}"
    out = File.join(YjitMemoryBench::ROOT, "bench/results/yjit-memory-#{label}.json")
    results = names.map do |name|
      env = VARIANTS.fetch(name)
      warn "== #{name} (#{RUBY_VERSION}) #{env.inspect}"
      run = Run.new(name, env, requests: options[:requests], workers: options[:workers],
        refork_requests: options[:refork_requests] || options[:requests] / 2)
      result = run.call
      puts summary(result)
      result
    end
    File.write(out, JSON.pretty_generate({ruby: RUBY_DESCRIPTION, date: Time.now.utc.strftime("%Y-%m-%dT%H:%M:%SZ"), results: results}))
    warn "wrote #{out}"
  end

  # Tables of one variant: the tree at each moment, and the gen-1 mold's and a worker's pages per kind.
  def summary(result)
    lines = ["", "### #{result[:variant]} (#{result[:ruby]}) #{result[:env].inspect}", ""]
    result[:snapshots].each do |label, snap|
      lines << "#{label}: Σ PSS #{mib(snap[:total_pss])} MiB; " + snap[:rows].map { |r|
        "#{r[:title][/(monitor|mold|worker \d+)/]} uss #{mib(r[:uss])}"
      }.join(", ")
    end
    %w[gen1_ready gen1_warm].each do |label|
      snap = result[:snapshots][label] or next
      lines << "" << "#{label}, USS per kind, MiB (worker: mean of the workers; same/changed vs the mold's page)" << ""
      lines << "| kind | mold rss | mold uss | worker rss | worker uss | of it same as mold | changed | changed, <= 2 words | differing bytes |"
      lines << "|---|---|---|---|---|---|---|---|---|"
      mold = snap[:rows].find { |r| r[:title].include?("mold") && r[:kinds] }
      workers = snap[:rows].select { |r| r[:title].include?("worker") && r[:kinds] }
      next if workers.empty? || !mold

      YjitMemoryMaps::KINDS.each do |kind|
        mean = ->(key) { workers.sum { |w| w[:kinds][kind][key] } / workers.size.to_f }
        lines << "| #{kind} | #{mib(mold[:kinds][kind][:rss])} | #{mib(mold[:kinds][kind][:uss])} | #{mib(mean.call(:rss))} | " \
          "#{mib(mean.call(:uss))} | #{mib(mean.call(:same))} | #{mib(mean.call(:changed))} | #{mib(mean.call(:changed_le2_words))} | " \
          "#{mib(mean.call(:diff_bytes))} |"
      end
    end
    lines.join("\n")
  end
end

YjitMemoryBench.main(ARGV) if $PROGRAM_NAME == __FILE__
