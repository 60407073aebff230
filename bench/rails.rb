# frozen_string_literal: true

# herd against Pitchfork, Puma (preload_app!) and Puma fork_worker on a real
# Rails app, 4 workers each, 20,000 requests per run from 4 clients browsing
# the scaffold (HTML and JSON pages, POSTs of the form with the CSRF token and
# cookie), Σ PSS of the server's tree sampled every second through the run,
# and the tree's CPU per request. The app (--app, RailsBench::APPS):
# - rails8, the default on Ruby >= 3.2: the Rails 8.1 app `rails new` makes
#   (test/apps/rails8/generate.rb), served from bench/rails8/Gemfile;
# - rails7, the default on Ruby 3.1: the Rails 7.2 app of
#   test/apps/rails/generate.rb, served from bench/rails/Gemfile.
# --malloc jemalloc preloads Debian's libjemalloc.so.2 (libjemalloc2) in every
# server process, as Rails 8's Dockerfile does; glibc's malloc otherwise.
# The servers run YJIT when the driver does (RUBY_YJIT_ENABLE=1 or --yjit);
# Rails 8.1 turns it on in production by itself.
#
#   # Ruby 3.4 + YJIT, the Rails 8 app (the install once):
#   export PATH=/root/.herd/rubies/3.4.5/bin:$PATH RUBY_YJIT_ENABLE=1
#   test/apps/setup && BUNDLE_GEMFILE=bench/rails8/Gemfile bundle install
#   bundle exec ruby bench/rails.rb                      # glibc: bench/results/rails8-glibc.md
#   bundle exec ruby bench/rails.rb --malloc jemalloc    # bench/results/rails8-jemalloc.md
#
#   # Ruby 3.1, the Rails 7.2 app (the install once):
#   test/apps/setup && BUNDLE_GEMFILE=bench/rails/Gemfile bundle install
#   bundle exec ruby bench/rails.rb                      # bench/results/rails.md
#
#   bundle exec ruby bench/rails.rb [--app rails7|rails8] [--malloc glibc|jemalloc] [--rounds N] [--requests N]
#     [--only herd,pitchfork] [--variants] [--workers N] [--name NAME]
#   bundle exec rake bench:rails
#
# The peers run from the app's bench bundle (the apps bundle plus pitchfork
# and puma), never from herd's bundle. Writes bench/results/NAME.md and
# NAME.json; NAME is `rails` for the Rails 7.2 app on glibc, APP-MALLOC
# otherwise (rails8-glibc, rails8-jemalloc, rails7-jemalloc), --name to
# write another. bench/rails/NOTES.md (rails7) or bench/rails8/NOTES.md
# (rails8), when it exists, ends the report of the default name.

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "optparse"
require "json"
require_relative "rails/run"
require_relative "rails/rounds"
require_relative "rails/report"
require_relative "support/plot"

command = Bench::Report.command_line($PROGRAM_NAME, ARGV)
options = {rounds: 2, requests: 20_000, interval: 1.0, workers: 4, only: RailsBench::SERVERS.map(&:name), variants: [],
           app: RailsBench::DEFAULT_APP, malloc: "glibc"}
parser = OptionParser.new do |opts|
  opts.banner = "usage: ruby bench/rails.rb [options]"
  opts.on("--rounds N", Integer, "rounds, every server once per round (default 2)") { |n| options[:rounds] = n }
  opts.on("--requests N", Integer, "requests per run (default 20000)") { |n| options[:requests] = n }
  opts.on("--interval S", Float, "seconds between Σ PSS samples (default 1)") { |s| options[:interval] = s }
  opts.on("--workers N", Integer, "workers per server (default 4)") { |n| options[:workers] = n }
  opts.on("--only LIST", Array, "servers (#{RailsBench::SERVERS.map(&:name).join(",")})") { |list| options[:only] = list }
  opts.on("--variants [LIST]", Array, "also herd with other settings (#{RailsBench::VARIANTS.map(&:name).join(",")}; all without LIST)") do |list|
    options[:variants] = list || (RailsBench::VARIANTS + RailsBench::KSM_PEERS).map(&:name)
  end
  opts.on("--app APP", RailsBench::APPS.keys, "the Rails app (#{RailsBench::APPS.keys.join(", ")}; " \
    "default #{RailsBench::DEFAULT_APP} on this Ruby)") { |app| options[:app] = app }
  opts.on("--malloc NAME", RailsBench::MALLOCS, "the servers' malloc (#{RailsBench::MALLOCS.join(", ")}; default glibc)") do |malloc|
    options[:malloc] = malloc
  end
  opts.on("--name NAME", "results file name under bench/results (default rails for rails7 on glibc, " \
    "else APP-MALLOC)") { |name| options[:name] = name }
  opts.on("--report-only LIST", Array, "rewrite the results from earlier runs' JSON files (their runs merged, " \
    "rounds numbered on)") { |list| options[:from] = list }
end
begin
  parser.parse!
rescue OptionParser::ParseError => e
  abort "bench/rails: #{e.message}"
end

# Earlier results' name stays what it meant, Rails 7.2 on glibc; the others
# say their app and malloc, so that runs of each keep their own files.
default_name = ->(app, malloc) { (app == "rails7" && malloc == "glibc") ? "rails" : "#{app}-#{malloc}" }

publish = lambda do |env, runs, opts|
  app = env[:app_name] || "rails7"
  opts[:notes] = Bench::Report.notes(RailsBench::APPS.fetch(app).notes, name: opts[:name],
    default: default_name.call(app, opts[:malloc] || "glibc"))
  report = RailsBench::Report.new(env: env, runs: runs, options: opts)
  markdown = report.markdown
  puts markdown
  plot = Bench::Plot.write(runs, opts[:name], title: "bench/rails: Σ PSS over time, by role (herd plot)", key: :server)
  markdown += "\n## Σ PSS over time (round 1 of each server)\n\n![Σ PSS over time, by role](#{File.basename(plot)})\n" if plot
  paths = Bench::Report.write(opts[:name], markdown: markdown,
    data: {environment: env, options: opts.except(:notes), summary: report.summary, runs: runs})
  warn "wrote #{paths.join(", ")}"
end

if options[:from]
  sources = options[:from].map { |path| JSON.parse(File.read(path), symbolize_names: true) }
  runs = []
  sources.each do |data|
    offset = runs.map { |run| run[:round] }.max || 0
    runs.concat(data[:runs].map { |run| run.merge(round: run[:round] + offset) })
  end
  env = sources.first[:environment].merge(command: sources.map { |data| data[:environment][:command] }.uniq.join("` then `"),
    herd: sources.map { |data| data[:environment][:herd] }.uniq.join(", "),
    seconds: sources.sum { |data| data[:environment][:seconds] }, loadavg_end: sources.last[:environment][:loadavg_end])
  first = sources.first[:options]
  name = options[:name] || default_name.call(first[:app] || "rails7", first[:malloc] || "glibc")
  opts = first.merge(name: name, rounds: runs.map { |run| run[:round] }.max,
    servers_described: sources.map { |data| data[:options][:servers_described] }.reduce(:merge).transform_keys(&:to_s))
  publish.call(env, runs, opts)
  exit
end

RailsBench.choose(app: options[:app], malloc: options[:malloc])
options[:name] ||= default_name.call(options[:app], options[:malloc])
servers = (RailsBench::SERVERS + RailsBench::VARIANTS + RailsBench::KSM_PEERS).select { |s| options[:only].include?(s.name) || options[:variants].include?(s.name) }
abort "bench/rails: no such server" if servers.empty?
if servers.any? { |s| s.name.end_with?("-ksm") }
  abort "bench/rails: the -ksm setups need the kernel's KSM daemon: as root, echo 1 > #{Bench::KSM::DIR}/run" unless Bench::KSM.running?
  options[:ksm] = Bench::KSM.settings
end
options[:servers_described] = servers.to_h { |s| [s.name, "#{s.description} (bench/rails/config/#{s.config})"] }
env, runs = RailsBench.rounds("rails", command, servers, options[:rounds]) do |setup, round, template, work|
  run = RailsBench.run(setup, template: template, work: work, requests: options[:requests], interval: options[:interval],
    workers: options[:workers], round: round)
  warn format("round %d %-22s %s", round, setup.name,
    run[:error] ? "ERROR #{run[:error].lines.first}" : "avg %.1f peak %.1f end %.1f MiB, %.1f req/s, %.2f CPU ms/request, p99 %.1f ms, failed %d, reforks %s" %
      [run.dig(:memory, :average), run.dig(:memory, :peak), run.dig(:memory, :end), run[:rps], run[:cpu_ms_per_request] || Float::NAN,
        run.dig(:latency_ms, :p99), run[:failed], run[:reforks].inspect])
  run
end
publish.call(env, runs, options)
