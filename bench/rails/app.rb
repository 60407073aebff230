# frozen_string_literal: true

require "fileutils"
require "json"
require "open3"
require "tmpdir"
require_relative "../http/support"
require_relative "../support/command"
require_relative "../support/report"

module RailsBench
  ROOT = HttpBench::ROOT
  THINGS = 20

  # A Rails app the drivers serve: the script that generates it (run under
  # its apps bundle) and the bench bundle that serves it (the apps bundle
  # plus the peers).
  App = Struct.new(:name, :generator, :apps_gemfile, :gemfile, :ruby, :description, keyword_init: true) do
    def path(relative) = File.join(ROOT, relative)

    # Notes on this app's results (the end of their report), next to its bench bundle.
    def notes = File.join(File.dirname(path(gemfile)), "NOTES.md")
  end

  APPS = [
    App.new(name: "rails7", generator: "test/apps/rails/generate.rb", apps_gemfile: "test/apps/Gemfile",
      gemfile: "bench/rails/Gemfile", ruby: "3.1",
      description: "The Rails 7.2 app that `test/apps/rails/generate.rb` makes (`rails new --minimal`, " \
        "`rails g scaffold Thing name:string notes:text`, SQLite, `RAILS_ENV=production`)"),
    App.new(name: "rails8", generator: "test/apps/rails8/generate.rb", apps_gemfile: "test/apps/rails8/Gemfile",
      gemfile: "bench/rails8/Gemfile", ruby: "3.2",
      description: "The Rails 8.1 app that `test/apps/rails8/generate.rb` makes (`rails new` with its defaults: " \
        "Propshaft, importmap, Turbo, Stimulus, Solid Cache/Queue/Cable, bootsnap; no Thruster in front; " \
        "`rails g scaffold Thing name:string notes:text`, SQLite for its four databases, `RAILS_ENV=production`)")
  ].to_h { |app| [app.name, app] }.freeze
  # Rails 8 needs Ruby 3.2; Ruby 3.1 keeps the Rails 7.2 app.
  DEFAULT_APP = (Gem::Version.new(RUBY_VERSION) >= Gem::Version.new("3.2")) ? "rails8" : "rails7"
  MALLOCS = %w[glibc jemalloc].freeze
  # Debian's libjemalloc2 (test/apps/setup installs it), what Rails 8's Dockerfile preloads.
  JEMALLOC_GLOB = "/usr/lib/*-linux-gnu/libjemalloc.so.2"

  # What the runs serve and with which malloc: bench/rails.rb chooses; the
  # other drivers keep the Rails 7.2 app on glibc they were written for.
  @app = APPS.fetch("rails7")
  @malloc = "glibc"

  class << self
    attr_reader :app, :malloc

    # @param app [String] a key of APPS
    # @param malloc [String] one of MALLOCS
    def choose(app:, malloc:)
      @app = APPS.fetch(app) { abort "bench/rails: no app #{app} (#{APPS.keys.join(", ")})" }
      if Gem::Version.new(RUBY_VERSION) < Gem::Version.new(@app.ruby)
        abort "bench/rails: #{app} needs Ruby #{@app.ruby}, this is #{RUBY_VERSION}"
      end
      abort "bench/rails: no such malloc #{malloc} (#{MALLOCS.join(", ")})" unless MALLOCS.include?(malloc)
      abort "bench/rails: --malloc jemalloc needs #{JEMALLOC_GLOB}: apt-get install libjemalloc2" if malloc == "jemalloc" && !jemalloc
      @malloc = malloc
    end

    # @return [String, nil] Debian's libjemalloc.so.2
    def jemalloc
      Dir.glob(JEMALLOC_GLOB).first
    end

    # Whether the driver runs with YJIT (RUBY_YJIT_ENABLE or --yjit): the
    # servers follow it.
    def yjit?
      defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled? || false
    end
  end

  module_function

  # The environment of a command run with the bench bundle: the caller's
  # own bundle (herd's Gemfile, under `bundle exec rake`) taken out, what
  # it added unset (its BUNDLER_VERSION is not the Rails 8 bundle's).
  def env(extra = {})
    base = defined?(::Bundler) ? ::Bundler.unbundled_env : ENV.to_h
    removed = (ENV.keys - base.keys).to_h { |key| [key, nil] }
    removed.merge(base, "BUNDLE_GEMFILE" => app.path(app.gemfile), "RAILS_ENV" => "production", "RACK_ENV" => "production")
      .merge(process_env, extra)
  end

  # What every process of a run starts with (nil unsets): the allocator, YJIT
  # as the driver runs it, and none of a deploy's settings (Solid Queue in
  # Puma, a log level).
  def process_env
    {"LD_PRELOAD" => ((malloc == "jemalloc") ? jemalloc : nil), "RUBY_YJIT_ENABLE" => (yjit? ? "1" : nil),
     "SOLID_QUEUE_IN_PUMA" => nil, "RAILS_LOG_LEVEL" => nil, "HERD_KSM" => nil}
  end

  def capture(env, *command, chdir: ROOT) = Bench::Command.capture("bench/rails", env, *command, chdir: chdir)

  # @return [String] the bench bundle's hint when it is missing, nil when installed
  def missing_bundle
    return unless Bench::Command.bundle_missing(env, chdir: ROOT)

    "the bench bundle is not installed: test/apps/setup && BUNDLE_GEMFILE=#{app.gemfile} bundle install"
  end

  # The results' environment header, shared by bench/rails and bench/reload.
  # @return [Hash]
  def environment(command)
    header = Bench::Report.environment(command).merge(versions: versions, loadavg_start: Bench::Report.loadavg)
    # A snapshot without .git (git archive COMMIT) says which commit it is.
    header[:herd] = ENV["HERD_REVISION"] if ENV["HERD_REVISION"]
    header
  end

  # @return [Hash] gem => version in the bench bundle
  def versions
    script = "puts %w[rails railties activerecord sqlite3 pitchfork puma rack herd].to_h { |n| [n, Gem.loaded_specs[n]&.version&.to_s] }.compact.to_json"
    JSON.parse(capture(env, "bundle", "exec", "ruby", "-rjson", "-e", script).lines.last)
  end

  # @return [String] the app's directory under tmp/apps, generated on first use
  def generate
    capture(env("BUNDLE_GEMFILE" => app.path(app.apps_gemfile)), "bundle", "exec", "ruby", app.path(app.generator)).lines.last.chomp
  end

  # The app (#app) with THINGS records, in a directory of its own. The seed
  # runs in the servers' environment and reports what they will run with.
  # @return [Hash] :dir (the seeded template), :source (tmp/apps/...), :ids,
  #   :ruby, :yjit, :jemalloc (the booted app's RUBY_DESCRIPTION, YJIT on, libjemalloc mapped)
  def template(work)
    source = generate
    dir = File.join(work, "template")
    FileUtils.rm_rf(dir)
    FileUtils.cp_r(source, dir)
    FileUtils.rm_rf(Dir.glob(File.join(dir, "log", "*")) + Dir.glob(File.join(dir, "tmp", "*")))
    seed = <<~RUBY
      require "json"
      Thing.delete_all
      notes = "A thing seeded for the benchmark. " * 6
      #{THINGS}.times { |i| Thing.create!(name: "thing \#{i + 1}", notes: notes) }
      puts JSON.generate(ids: Thing.order(:id).pluck(:id), ruby: RUBY_DESCRIPTION,
        yjit: defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled? ? true : false,
        jemalloc: File.read("/proc/self/maps").include?("libjemalloc"))
    RUBY
    booted = JSON.parse(capture(env, "bin/rails", "runner", seed, chdir: dir).lines.last, symbolize_names: true)
    if booted[:jemalloc] != (malloc == "jemalloc")
      raise "bench/rails: the app booted #{booted[:jemalloc] ? "with" : "without"} libjemalloc, asked for #{malloc}"
    end
    booted.merge(dir: dir, source: source)
  end

  # The header's app, allocator, Ruby and YJIT, as the app booted in the
  # servers' environment reported them (#template).
  # @return [Hash]
  def settings(template)
    {app: Bench::Report.relative(template[:source]), app_name: app.name, server_ruby: template[:ruby], yjit: template[:yjit],
     yjit_env: process_env["RUBY_YJIT_ENABLE"], malloc: malloc, ld_preload: process_env["LD_PRELOAD"]}
  end

  # A fresh copy of the template for one run (its database gets written).
  def copy(template_dir, work, name)
    dir = File.join(work, name)
    FileUtils.rm_rf(dir)
    FileUtils.cp_r(template_dir, dir)
    dir
  end
end
