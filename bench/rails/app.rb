# frozen_string_literal: true

require "fileutils"
require "json"
require "open3"
require "tmpdir"
require_relative "../http/support"
require_relative "../support/report"

module RailsBench
  ROOT = HttpBench::ROOT
  GEMFILE = File.join(ROOT, "bench", "rails", "Gemfile")
  APPS_GEMFILE = File.join(ROOT, "test", "apps", "Gemfile")
  THINGS = 20

  module_function

  # The environment of a command run with the bench bundle: the caller's
  # own bundle (herd's Gemfile, under `bundle exec rake`) taken out.
  def env(extra = {})
    base = defined?(::Bundler) ? ::Bundler.unbundled_env : ENV.to_h
    base.merge("BUNDLE_GEMFILE" => GEMFILE, "RAILS_ENV" => "production", "RACK_ENV" => "production").merge(extra)
  end

  def capture(env, *command, chdir: ROOT)
    out, err, status = Open3.capture3(env, *command, chdir: chdir, in: File::NULL)
    raise "bench/rails: failed: #{command.join(" ")}\n#{err.lines.last(15).join}" unless status.success?

    out
  end

  # @return [String] the bench bundle's hint when it is missing, nil when installed
  def missing_bundle
    _out, status = Open3.capture2e(env, "bundle", "check", chdir: ROOT)
    status.success? ? nil : "the bench bundle is not installed: test/apps/setup && BUNDLE_GEMFILE=bench/rails/Gemfile bundle install"
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

  # The Rails app test/apps generates (rails new --minimal + scaffold Thing,
  # SQLite, production), with THINGS records, in a directory of its own.
  # @return [Hash] :dir (the seeded template), :source (tmp/apps/...), :ids
  def template(work)
    source = capture(env("BUNDLE_GEMFILE" => APPS_GEMFILE), "bundle", "exec", "ruby",
      File.join(ROOT, "test", "apps", "rails", "generate.rb")).lines.last.chomp
    dir = File.join(work, "template")
    FileUtils.rm_rf(dir)
    FileUtils.cp_r(source, dir)
    FileUtils.rm_rf(Dir.glob(File.join(dir, "log", "*")) + Dir.glob(File.join(dir, "tmp", "*")))
    seed = <<~RUBY
      Thing.delete_all
      notes = "A thing seeded for the benchmark. " * 6
      #{THINGS}.times { |i| Thing.create!(name: "thing \#{i + 1}", notes: notes) }
      puts Thing.order(:id).pluck(:id).inspect
    RUBY
    ids = capture(env, "bin/rails", "runner", seed, chdir: dir).lines.last.scan(/\d+/).map(&:to_i)
    {dir: dir, source: source, ids: ids}
  end

  # A fresh copy of the template for one run (its database gets written).
  def copy(template_dir, work, name)
    dir = File.join(work, name)
    FileUtils.rm_rf(dir)
    FileUtils.cp_r(template_dir, dir)
    dir
  end
end
