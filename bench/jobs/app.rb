# frozen_string_literal: true

require "fileutils"
require "json"
require "open3"
require_relative "../support/clock"
require_relative "../support/command"
require_relative "../support/report"

module JobsBench
  ROOT = Bench::Report::ROOT
  # The apps bundle: Rails 8.1, Sidekiq 8, Solid Queue, herd by path (this checkout's).
  GEMFILE = File.join(ROOT, "test/apps/rails8/Gemfile")
  GENERATOR = File.join(ROOT, "test/apps/rails8/generate.rb")
  # What bench/jobs.rb copies over the generated app: the jobs, the
  # initializer that picks the adapter, queue.yml with JOB_THREADS, the
  # enqueuing script.
  OVERLAY = File.join(__dir__, "overlay")
  THINGS = 20
  # Every job ends with a line here (bench/jobs/overlay/app/jobs/bench_job.rb).
  DONE_LOG = "tmp/bench_jobs.log"
  # One line per fork that herd/fork prepared (the cheap path's initializer).
  FORK_LOG = "tmp/bench_herd_fork.log"

  module_function

  def yjit?
    defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled? || false
  end

  # The environment of the app's commands: the driver's own bundle taken
  # out, the apps bundle in, production, YJIT as the driver runs, a
  # connection pool as large as the most threads a setup runs (Sidekiq's
  # 20), and none of the knobs the setups set themselves.
  def env(extra = {})
    base = defined?(::Bundler) ? ::Bundler.unbundled_env : ENV.to_h
    removed = (ENV.keys - base.keys).to_h { |key| [key, nil] }
    knobs = %w[SOLID_QUEUE_IN_PUMA JOB_CONCURRENCY JOB_THREADS BENCH_JOBS_ADAPTER BENCH_JOBS_HERD_FORK REDIS_URL
      SIDEKIQ_COUNT HERD_JOB_WORKERS BENCH_JOBS_YJIT_LATE RAILS_LOG_LEVEL RUBYOPT HERD_KSM].to_h { |key| [key, nil] }
    removed.merge(base, knobs, "BUNDLE_GEMFILE" => GEMFILE, "RAILS_ENV" => "production", "RACK_ENV" => "production",
      "RUBY_YJIT_ENABLE" => (yjit? ? "1" : nil), "RAILS_MAX_THREADS" => "25").merge(extra)
  end

  def capture(env, *command, chdir: ROOT) = Bench::Command.capture("bench/jobs", env, *command, chdir: chdir)

  # @return [String, nil] why the apps bundle cannot run, nil when it can
  def missing_bundle
    missing = Bench::Command.bundle_missing(env, chdir: ROOT)
    missing && "the apps bundle is not installed: test/apps/setup (#{missing})"
  end

  # The generated Rails 8 app (tmp/apps/rails8-DIGEST, made on first use),
  # copied into work/template with the overlay, 20 things seeded, Solid
  # Queue's tables empty. The seed boots the app as the setups will, and
  # reports what it runs on.
  # @return [Hash] :dir, :source, :ruby, :yjit, :versions
  def template(work)
    source = capture(env, "bundle", "exec", "ruby", GENERATOR).lines.last.chomp
    dir = File.join(work, "template")
    FileUtils.rm_rf(dir)
    FileUtils.cp_r(source, dir)
    FileUtils.rm_rf(Dir.glob(File.join(dir, "log", "*")) + Dir.glob(File.join(dir, "tmp", "*")))
    FileUtils.cp_r(File.join(OVERLAY, "."), dir)
    seed = <<~RUBY
      require "json"
      Thing.delete_all
      notes = "A thing seeded for the benchmark. " * 6
      #{THINGS}.times { |i| Thing.create!(name: "thing \#{i + 1}", notes: notes) }
      SolidQueue::Record.descendants.reject(&:abstract_class?).each(&:delete_all)
      versions = %w[rails sidekiq solid_queue sqlite3 herd].to_h { |name| [name, Gem.loaded_specs[name]&.version&.to_s] }
      puts JSON.generate(ruby: RUBY_DESCRIPTION, yjit: defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled? ? true : false,
        versions: versions, things: Thing.count, queue_jobs: SolidQueue::Job.count)
    RUBY
    booted = JSON.parse(capture(env, "bin/rails", "runner", seed, chdir: dir).lines.last, symbolize_names: true)
    FileUtils.rm_rf(Dir.glob(File.join(dir, "log", "*")))
    booted.merge(dir: dir, source: Bench::Report.relative(source))
  end

  # A fresh copy of the template for one run (its databases get written).
  def copy(template_dir, work, name)
    dir = File.join(work, name)
    FileUtils.rm_rf(dir)
    FileUtils.cp_r(template_dir, dir)
    dir
  end

  # @return [Array<String>] the lines of the app's DONE_LOG
  def done_lines(dir)
    File.readlines(File.join(dir, DONE_LOG))
  rescue Errno::ENOENT
    []
  end

  # @return [Hash{String => Integer}] Solid Queue's registered processes by kind
  def solid_queue_processes(dir)
    out, status = Open3.capture2e("sqlite3", "-readonly", "-cmd", ".timeout 2000",
      File.join(dir, "storage/production_queue.sqlite3"), "SELECT kind, count(*) FROM solid_queue_processes GROUP BY kind")
    return {} unless status.success?

    out.lines.to_h { |line|
      kind, count = line.strip.split("|")
      [kind, count.to_i]
    }
  end

  # @return [Integer, nil] a count of Solid Queue's books (nil when unreadable)
  def solid_queue_count(dir, from)
    out, status = Open3.capture2e("sqlite3", "-readonly", "-cmd", ".timeout 2000",
      File.join(dir, "storage/production_queue.sqlite3"), "SELECT count(*) FROM #{from}")
    status.success? ? out.strip.to_i : nil
  end

  # `bin/rails runner script/bench_enqueue.rb` in the app, booted once per
  # run and fed a batch a line (bench/jobs/overlay/script/bench_enqueue.rb).
  class Enqueuer
    def initialize(dir:, env:, log_path:)
      @dir = dir
      @env = env.merge("RAILS_LOG_LEVEL" => "warn")
      @log_path = log_path
    end

    # @return [String] the script's "ready" line
    def start(timeout: 120)
      @stdin, @stdout, @wait = Open3.popen2(@env, "bin/rails", "runner", "script/bench_enqueue.rb", chdir: @dir,
        err: [@log_path, "a"], pgroup: true)
      answer(/\ABENCH ready /, timeout)
    end

    # @return [Hash] :count (enqueued), :t0, :t1 (CLOCK_MONOTONIC around the enqueue)
    def enqueue(kind, count, timeout: 120)
      @stdin.puts("#{kind} #{count}")
      @stdin.flush
      _, _, _kind, enqueued, t0, t1 = answer(/\ABENCH enqueued /, timeout).split
      {count: Integer(enqueued), t0: Float(t0), t1: Float(t1)}
    end

    def stop
      return unless @wait

      @stdin.close unless @stdin.closed?
      unless @wait.join(20)
        Process.kill("KILL", -@wait.pid)
        @wait.join(5)
      end
      @stdout.close unless @stdout.closed?
    rescue SystemCallError, IOError
      nil
    ensure
      @wait = nil
    end

    private

    def answer(pattern, timeout)
      deadline = Bench::Clock.now + timeout
      loop do
        left = deadline - Bench::Clock.now
        raise "bench_enqueue: no #{pattern.source} within #{timeout} s" if left <= 0
        next unless IO.select([@stdout], nil, nil, left)

        line = @stdout.gets
        raise "bench_enqueue exited (#{@wait.value.inspect}): #{File.read(@log_path).lines.last(10).join}" unless line
        return line.strip if line.match?(pattern)
      end
    end
  end
end
