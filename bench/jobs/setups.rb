# frozen_string_literal: true

require_relative "../support/ksm"

module JobsBench
  # One way to run the app's jobs: the commands (each its own process, all
  # in one process group: the first's), the environment they add, and what
  # says they are up: `expect` job processes registered with the job system
  # (Sidekiq's process set in Redis, Solid Queue's Worker rows). A baseline
  # runs the CPU batch only: one process, one thread, what the others'
  # CPU-bound throughput is measured against.
  Setup = Struct.new(:name, :system, :commands, :env, :expect, :baseline, :description, :ksm, keyword_init: true) do
    def sidekiq? = system == :sidekiq

    # The same setup with the kernel's same-page merging asked for on every
    # process: herd's own `ksm` setting (HERD_KSM=1), the others through
    # bench/support/ksm_exec.rb, as systemd's MemoryKSM=yes would.
    def with_ksm
      dup.tap do |setup|
        setup.name = "#{name}+ksm"
        setup.ksm = true
        if name.start_with?("herd")
          setup.env = env.merge("HERD_KSM" => "1")
          setup.description = "#{description}; `HERD_KSM=1` (herd's `ksm` setting: the kernel may merge identical pages)"
        else
          setup.commands = commands.map { |command| Bench::KSM.wrap(command) }
          setup.description = "#{description}; KSM asked for on every process (prctl PR_SET_MEMORY_MERGE, as systemd's MemoryKSM=yes)"
        end
      end
    end

    # The same setup with glibc's malloc arenas capped at 2 (MALLOC_ARENA_MAX=2,
    # what Heroku sets for Ruby apps) instead of glibc's own 8 per core.
    def with_arena_max2
      with_env("arena_max2", {"MALLOC_ARENA_MAX" => "2"}, "glibc's malloc arenas capped at 2, as Heroku sets")
    end

    # The same setup, named `NAME+suffix`, with variables added to its environment.
    def with_env(suffix, added, why)
      dup.tap do |setup|
        setup.name = "#{name}+#{suffix}"
        setup.env = env.merge(added)
        setup.description = "#{description}; `#{added.map { |key, value| "#{key}=#{value}" }.join(" ")}` (#{why})"
      end
    end
  end

  SIDEKIQ_ENV = {"BENCH_JOBS_ADAPTER" => "sidekiq"}.freeze
  # Ruby's own free-slot ratios, set so that herd does not fill in its own
  # (Cluster::RubyGCDefaults): both, or one of them, on the herd setups that refork.
  GC_RATIOS = [
    ["ruby_gc", {"RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO" => "0.20", "RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO" => "0.65"},
      "Ruby's own free-slot ratios instead of herd's 0.10 and 0.25"],
    ["min20", {"RUBY_GC_HEAP_FREE_SLOTS_MIN_RATIO" => "0.20"}, "Ruby's own minimum of free slots; herd's maximum (0.25) kept"],
    ["max65", {"RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO" => "0.65"}, "Ruby's own maximum of free slots; herd's minimum (0.10) kept"]
  ].freeze
  GC_RATIO_SETUPS = %w[herd-sidekiq+refork herd-solid_queue+refork].freeze
  # config/queue.yml's `processes:` (bench/jobs/overlay/config/queue.yml).
  FOUR = {"JOB_CONCURRENCY" => "4"}.freeze

  # Heap settings tried on both job systems' `+refork` setups: suffix, the
  # overlay's config file (herd_refork.rb's schedule plus one setting), what it changes.
  HEAP_VARIANTS = [
    ["compact", "herd_refork_compact.rb", "`prepare_heap compact: true`: every promoted mold compacts"],
    ["no_major_gc", "herd_refork_no_major_gc.rb",
      "`prepare_heap major_gc_first: false, major_gc_when_due: false`: no mold runs a major GC for its workers' sake"],
    ["no_room", "herd_refork_no_room.rb", "`prepare_heap room: false`: no room for the children, in the molds or the workers"],
    ["seal", "herd_refork_seal.rb",
      "`prepare_heap seal_malloc: true`: the first mold seals malloc's free chunks too, instead of only giving their pages back"]
  ].freeze

  # `herd sidekiq -w 4` and `herd solid_queue -w 4` with `refork_after` and one heap setting.
  def self.heap_variants
    HEAP_VARIANTS.flat_map do |suffix, file, why|
      description = "the same with #{why} (bench/jobs/overlay/config/#{file})"
      [Setup.new(name: "herd-sidekiq+refork+#{suffix}", system: :sidekiq, expect: 4, env: SIDEKIQ_ENV,
        commands: [%W[bundle exec herd sidekiq -c config/#{file} -w 4 -- -c 5]], description: description),
        Setup.new(name: "herd-solid_queue+refork+#{suffix}", system: :solid_queue, expect: 4, env: FOUR,
          commands: [%W[bundle exec herd solid_queue -c config/#{file} -w 4]], description: description)]
    end
  end

  PLAIN = ([
    Setup.new(name: "herd-sidekiq", system: :sidekiq, expect: 4, env: SIDEKIQ_ENV,
      commands: [%w[bundle exec herd sidekiq -w 4 -- -c 5]],
      description: "`herd sidekiq -w 4 -- -c 5`: 4 Sidekiq processes × 5 threads forked from one mold"),
    Setup.new(name: "herd-sidekiq+refork", system: :sidekiq, expect: 4, env: SIDEKIQ_ENV,
      commands: [%w[bundle exec herd sidekiq -c config/herd_refork.rb -w 4 -- -c 5]],
      description: "the same with `refork_after [50, 100, 1000]` (bench/jobs/overlay/config/herd_refork.rb): " \
        "workers reforked from a warmed one after 50, then 100 jobs"),
    Setup.new(name: "herd-sidekiq+refork_often", system: :sidekiq, expect: 4, env: SIDEKIQ_ENV,
      commands: [%w[bundle exec herd sidekiq -c config/herd_refork_often.rb -w 4 -- -c 5]],
      description: "the same with `refork_after [50, 100, 200, 400, 800, 1600]` " \
        "(bench/jobs/overlay/config/herd_refork_often.rb)"),
    Setup.new(name: "herd-sidekiq+yjit_late", system: :sidekiq, expect: 4,
      env: SIDEKIQ_ENV.merge("RUBY_YJIT_ENABLE" => nil, "BENCH_JOBS_YJIT_LATE" => "1"),
      commands: [%w[bundle exec herd sidekiq -c config/herd_yjit_late.rb -w 4 -- -c 5]],
      description: "the same with YJIT off in the mold and turned on in each worker after its fork " \
        "(bench/jobs/overlay/config/herd_yjit_late.rb)"),
    Setup.new(name: "sidekiq-x4", system: :sidekiq, expect: 4, env: SIDEKIQ_ENV,
      commands: Array.new(4) { %w[bundle exec sidekiq -c 5] },
      description: "4 separate `bundle exec sidekiq -c 5` (each boots the app)"),
    Setup.new(name: "sidekiq-c20", system: :sidekiq, expect: 1, env: SIDEKIQ_ENV,
      commands: [%w[bundle exec sidekiq -c 20]],
      description: "1 `bundle exec sidekiq -c 20` (the same 20 threads in one process)"),
    Setup.new(name: "sidekiq-c1", system: :sidekiq, expect: 1, env: SIDEKIQ_ENV, baseline: true,
      commands: [%w[bundle exec sidekiq -c 1]],
      description: "baseline: 1 `bundle exec sidekiq -c 1` (CPU batch only)"),
    Setup.new(name: "herd-solid_queue", system: :solid_queue, expect: 4, env: FOUR,
      commands: [%w[bundle exec herd solid_queue -w 4]],
      description: "`herd solid_queue -w 4` with JOB_CONCURRENCY=4 (queue.yml: 4 workers × 3 threads; " \
        "herd worker 0 also runs the dispatcher and the scheduler)"),
    Setup.new(name: "herd-solid_queue+refork", system: :solid_queue, expect: 4, env: FOUR,
      commands: [%w[bundle exec herd solid_queue -c config/herd_refork.rb -w 4]],
      description: "the same with `refork_after [50, 100, 1000]`"),
    Setup.new(name: "herd-solid_queue+yjit_late", system: :solid_queue, expect: 4,
      env: FOUR.merge("RUBY_YJIT_ENABLE" => nil, "BENCH_JOBS_YJIT_LATE" => "1"),
      commands: [%w[bundle exec herd solid_queue -c config/herd_yjit_late.rb -w 4]],
      description: "the same with YJIT off in the mold and turned on in each worker after its fork"),
    Setup.new(name: "bin/jobs", system: :solid_queue, expect: 4, env: FOUR,
      commands: [%w[bin/jobs]],
      description: "`bin/jobs` with JOB_CONCURRENCY=4: Solid Queue's fork supervisor, 4 workers × 3 threads, " \
        "a dispatcher, a scheduler"),
    Setup.new(name: "bin/jobs+herd/fork", system: :solid_queue, expect: 4, env: FOUR.merge("BENCH_JOBS_HERD_FORK" => "1"),
      commands: [%w[bin/jobs]],
      description: "the same `bin/jobs` with `require \"herd/fork\"` in an initializer: the supervisor prepares " \
        "its heap before each fork (the cheap path)"),
    Setup.new(name: "bin/jobs-1x1", system: :solid_queue, expect: 1, baseline: true,
      env: {"JOB_CONCURRENCY" => "1", "JOB_THREADS" => "1"}, commands: [%w[bin/jobs]],
      description: "baseline: `bin/jobs` with 1 worker × 1 thread (CPU batch only)")
  ] + heap_variants).freeze
  KSM = %w[herd-sidekiq herd-sidekiq+refork sidekiq-x4 sidekiq-c20 herd-solid_queue+refork bin/jobs].freeze
  ARENAS = %w[herd-sidekiq+refork sidekiq-x4 sidekiq-c20 herd-solid_queue+refork bin/jobs].freeze
  SETUPS = (PLAIN + PLAIN.select { |setup| KSM.include?(setup.name) }.map(&:with_ksm) +
    PLAIN.select { |setup| ARENAS.include?(setup.name) }.map(&:with_arena_max2) +
    PLAIN.select { |setup| GC_RATIO_SETUPS.include?(setup.name) }
      .flat_map { |setup| GC_RATIOS.map { |suffix, env, why| setup.with_env(suffix, env, why) } }).freeze

  # The targets of issue 36: setup, compared with, at most this ratio of Σ PSS.
  MEMORY_TARGETS = [
    ["herd-sidekiq", "sidekiq-x4", 0.5],
    ["herd-sidekiq", "sidekiq-c20", 1.3],
    ["herd-sidekiq+refork", "sidekiq-x4", 0.5],
    ["herd-sidekiq+refork", "sidekiq-c20", 1.3],
    ["herd-solid_queue", "bin/jobs", 0.5],
    ["herd-solid_queue+refork", "bin/jobs", 0.5],
    ["bin/jobs+herd/fork", "bin/jobs", nil],
    ["herd-sidekiq+ksm", "sidekiq-x4+ksm", 0.5],
    ["herd-sidekiq+ksm", "sidekiq-c20+ksm", 1.3],
    ["herd-sidekiq+refork+ksm", "sidekiq-x4", 0.5],
    ["herd-sidekiq+refork+ksm", "sidekiq-x4+ksm", 0.5],
    ["herd-sidekiq+refork+ksm", "sidekiq-c20", 1.3],
    ["herd-sidekiq+refork+ksm", "sidekiq-c20+ksm", 1.3],
    ["herd-solid_queue+refork+ksm", "bin/jobs", 0.5],
    ["herd-solid_queue+refork+ksm", "bin/jobs+ksm", 0.5],
    ["herd-sidekiq+refork+arena_max2", "sidekiq-x4+arena_max2", 0.5],
    ["herd-sidekiq+refork+arena_max2", "sidekiq-c20+arena_max2", 1.3],
    ["herd-solid_queue+refork+arena_max2", "bin/jobs+arena_max2", 0.5]
  ].freeze
  # CPU-bound jobs/s against the job system's one process with one thread.
  CPU_TARGET = 1.8
  BASELINES = {sidekiq: "sidekiq-c1", solid_queue: "bin/jobs-1x1"}.freeze
end
