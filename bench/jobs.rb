# frozen_string_literal: true

# Job workers on the Rails 8 app (issue 36): `herd sidekiq` against separate
# `sidekiq` processes and one `sidekiq` with as many threads, `herd
# solid_queue` against `bin/jobs` (Solid Queue's fork supervisor), and
# `bin/jobs` with herd's fork hook in its supervisor (the cheap path).
# Per setup: Σ PSS of all its processes over the run (time average, peak,
# end), jobs/s draining a mixed batch of real jobs (the database, a view
# rendered, CPU), and jobs/s on CPU-bound jobs alone against one process
# with one thread.
#
#   # Ruby 3.4, the apps bundle (test/apps/setup installs it and redis-server);
#   # YJIT as users run it: Rails' config.yjit turns it on at the end of boot
#   export PATH=/root/.herd/rubies/3.4.5/bin:$PATH
#   ruby bench/jobs.rb                      # bench/results/jobs.md and jobs.json
#   RUBY_YJIT_ENABLE=1 ruby bench/jobs.rb   # YJIT from the start: every process compiles its boot too
#   ruby bench/jobs.rb --smoke              # a minute or two: every setup once, small batches
#   ruby bench/jobs.rb [--reps N] [--jobs N] [--cpu-jobs N] [--only LIST] [--interval S] [--idle S] [--name NAME]
#   # the +ksm setups need the kernel's KSM daemon (as root: echo 1 > /sys/kernel/mm/ksm/run); --idle 60
#   # shows what its merging reaches once the queues are quiet
#
# No Bundler needed for the driver (herd's lib and the standard library);
# the app's commands run with the apps bundle (test/apps/rails8/Gemfile),
# whose herd is this checkout's. The app is the one test/apps/rails8/generate.rb
# makes under tmp/apps, copied with bench/jobs/overlay over it: the jobs,
# an initializer (the Sidekiq adapter when BENCH_JOBS_ADAPTER=sidekiq; herd's
# fork hook when BENCH_JOBS_HERD_FORK=1), queue.yml with JOB_THREADS, and
# the script that enqueues. bench/jobs/NOTES.md, when it exists, ends the report
# of the default name (jobs.md).

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "optparse"
require "tmpdir"
require_relative "jobs/setups"
require_relative "jobs/app"
require_relative "jobs/redis"
require_relative "jobs/run"
require_relative "jobs/report"
require_relative "support/plot"

command = Bench::Report.command_line($PROGRAM_NAME, ARGV)
options = {reps: 2, jobs: 2000, cpu_jobs: 400, interval: 0.5, only: JobsBench::SETUPS.map(&:name), name: "jobs",
           idle: 0.0, settle: 3.0, boot_timeout: 180, batch_timeout: 600, stop_timeout: 60, plot: true, keep: false}
parser = OptionParser.new do |opts|
  opts.banner = "usage: ruby bench/jobs.rb [options]"
  opts.on("--reps N", Integer, "repetitions, every setup once per repetition (default 2)") { |n| options[:reps] = n }
  opts.on("--jobs N", Integer, "jobs in the mixed batch (default 2000)") { |n| options[:jobs] = n }
  opts.on("--cpu-jobs N", Integer, "jobs in the CPU-bound batch (default 400)") { |n| options[:cpu_jobs] = n }
  opts.on("--only LIST", Array, "setups (#{JobsBench::SETUPS.map(&:name).join(",")})") { |list| options[:only] = list }
  opts.on("--interval S", Float, "seconds between Σ PSS samples (default 0.5)") { |s| options[:interval] = s }
  opts.on("--idle S", Float, "after the batches, Σ PSS once more after S s without jobs (default 0: not measured)") do |s|
    options[:idle] = s
  end
  opts.on("--name NAME", "results file name under bench/results (default jobs)") { |name| options[:name] = name }
  opts.on("--smoke", "a quick check: 1 repetition, 100 mixed and 40 CPU jobs, results as jobs-smoke") do
    options.merge!(smoke: true, reps: 1, jobs: 100, cpu_jobs: 40, name: "jobs-smoke", settle: 1.0)
  end
  opts.on("--no-plot", "no SVG of Σ PSS over time") { options[:plot] = false }
  opts.on("--keep", "keep each run's app copy (in the scratch directory, printed)") { options[:keep] = true }
  opts.on("-h", "--help") do
    puts opts
    exit
  end
end
begin
  parser.parse!
rescue OptionParser::ParseError => e
  abort "bench/jobs: #{e.message}"
end
abort "bench/jobs: the Rails 8 app needs Ruby >= 3.2, this is #{RUBY_VERSION}" if Gem::Version.new(RUBY_VERSION) < Gem::Version.new("3.2")
unknown = options[:only] - JobsBench::SETUPS.map(&:name)
abort "bench/jobs: no setup #{unknown.join(", ")}" unless unknown.empty?
setups = JobsBench::SETUPS.select { |setup| options[:only].include?(setup.name) }
if setups.any?(&:ksm) && !Bench::KSM.running?
  abort "bench/jobs: the +ksm setups need the kernel's KSM daemon: as root, echo 1 > #{Bench::KSM::DIR}/run"
end
missing = JobsBench.missing_bundle
abort "bench/jobs: #{missing}" if missing
if setups.any?(&:sidekiq?) && (tool = JobsBench::Redis.missing)
  abort "bench/jobs: #{tool} is missing: test/apps/setup installs Debian's redis-server"
end

env = Bench::Report.environment(command).merge(loadavg_start: Bench::Report.loadavg)
env[:herd] = ENV["HERD_REVISION"] if ENV["HERD_REVISION"]
env[:ksm] = Bench::KSM.settings if setups.any?(&:ksm)
started = Bench::Clock.now
runs = []
work = Dir.mktmpdir("bench-jobs")
redis = nil
begin
  redis = JobsBench::Redis.new(work).start if setups.any?(&:sidekiq?)
  env[:redis] = redis&.version
  warn "bench/jobs: preparing the app in #{work}"
  template = JobsBench.template(work)
  env.merge!(app: template[:source], server_ruby: template[:ruby], yjit: template[:yjit], yjit_env: JobsBench.yjit?, versions: template[:versions])
  (1..options[:reps]).each do |round|
    setups.rotate(round - 1).each do |setup|
      run = JobsBench.run(setup, round: round, template: template, work: work, redis: redis, options: options)
      runs << run
      warn format("rep %d %-20s %s", round, setup.name, JobsBench.line(run))
    end
  end
ensure
  redis&.stop
  options[:keep] ? warn("bench/jobs: kept #{work}") : FileUtils.rm_rf(work)
end
env[:loadavg_end] = Bench::Report.loadavg
env[:seconds] = (Bench::Clock.now - started).round

report = JobsBench::Report.new(env: env, runs: runs, options: options)
markdown = report.markdown
if options[:plot]
  plot = Bench::Plot.write(runs, options[:name], title: "bench/jobs: Σ PSS over time, by role (herd plot)", key: :setup)
  markdown += "\n## Σ PSS over time (repetition 1 of each setup)\n\n![Σ PSS over time, by role](#{File.basename(plot)})\n" if plot
end
markdown += Bench::Report.notes(File.join(__dir__, "jobs", "NOTES.md"), name: options[:name], default: "jobs")
puts markdown
paths = Bench::Report.write(options[:name], markdown: markdown,
  data: {environment: env, options: options, summary: report.summary, runs: runs})
warn "wrote #{paths.join(", ")}"
