# frozen_string_literal: true

require "digest"
require "fileutils"
require "rbconfig"

module Herd
  # What the Rails apps' generators (test/apps/rails/generate.rb for Rails
  # 7.2, test/apps/rails8/generate.rb) share: an app is generated once per
  # digest of the files that make it, into tmp/apps/NAME-DIGEST (gitignored),
  # built aside and renamed into place, so that a run that dies halfway, or
  # two runs at once, never leave a half-made app behind the final name.
  class GeneratedApp
    ROOT = File.expand_path("../../..", __dir__)

    attr_reader :work

    # @param name [String] the directory's prefix under tmp/apps
    # @param gemfile [String] the bundle the app loads (and the generator runs under)
    # @param inputs [Array<String>] the files whose contents make the app
    def initialize(name, gemfile:, inputs:)
      @gemfile = gemfile
      @digest = Digest::SHA256.hexdigest(inputs.map { |path| File.read(path) }.join)[0, 12]
      @target = File.join(ROOT, "tmp", "apps", "#{name}-#{@digest}")
    end

    # Prints the app's directory: the one already generated, or the one the
    # block generates in #work.
    def generate
      return puts(@target) if File.exist?(File.join(@target, ".generated"))

      unless ENV["BUNDLE_GEMFILE"] && File.expand_path(ENV["BUNDLE_GEMFILE"]) == @gemfile
        abort "generate.rb: run it under its bundle (BUNDLE_GEMFILE=#{@gemfile} bundle exec ...)"
      end
      @work = "#{@target}.#{Process.pid}.tmp"
      FileUtils.rm_rf(@work)
      FileUtils.mkdir_p(File.dirname(@work))
      yield
      File.write(File.join(@work, ".generated"), "#{@digest}\n")
      FileUtils.rm_rf(@target)
      File.rename(@work, @target)
      puts @target
    end

    def run(*command, chdir: @work, env: {})
      warn "generate.rb: #{command.join(" ")}"
      system({"BUNDLE_GEMFILE" => @gemfile, "RAILS_ENV" => nil}.merge(env), *command, chdir: chdir, in: File::NULL, out: $stderr) ||
        abort("generate.rb: failed (#{$?.inspect}): #{command.join(" ")}")
    end

    # Rewrites a generated file; aborts when the rewrite changed nothing
    # (the generator's output moved, and the app would not be what the
    # tests expect).
    def edit(*path)
      file = File.join(@work, *path)
      text = File.read(file)
      changed = yield(text.dup)
      abort "generate.rb: #{file} did not change: the generator's output moved" if changed == text
      File.write(file, changed)
    end

    # The app loads the committed bundle, not a Gemfile of its own.
    def use_committed_bundle
      FileUtils.rm_f([File.join(@work, "Gemfile"), File.join(@work, "Gemfile.lock")])
      edit("config", "boot.rb") do |text|
        text.sub(/^ENV\["BUNDLE_GEMFILE"\] \|\|= .*$/) { %(ENV["BUNDLE_GEMFILE"] ||= #{@gemfile.inspect}) }
      end
    end

    # What the tests browse: `Thing`, an HTML form with a CSRF token and JSON
    # views (jbuilder), a validation to fail, the index as the root.
    def scaffold_things
      run(RbConfig.ruby, "bin/rails", "generate", "scaffold", "Thing", "name:string", "notes:text", "--quiet")
      edit("app", "models", "thing.rb") { |text| text.sub(/^end$/, "  validates :name, presence: true\nend") }
      edit("config", "routes.rb") { |text| text.sub(/^  resources :things$/, %(  resources :things\n  root "things#index")) }
    end

    # The schemas go into database files that each test copies (with the app).
    # @param databases [Array<String>] the files storage/NAME.sqlite3 that must exist then
    def prepare_databases(databases)
      run(RbConfig.ruby, "bin/rails", "db:prepare", env: {"RAILS_ENV" => "production"})
      missing = databases.reject { |name| File.file?(File.join(@work, "storage", "#{name}.sqlite3")) }
      abort "generate.rb: no #{missing.map { |name| "storage/#{name}.sqlite3" }.join(", ")}" unless missing.empty?
    end
  end
end
