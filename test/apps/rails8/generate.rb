# frozen_string_literal: true

# Generates the Rails 8 app that test/apps/rails_test.rb serves on Ruby >= 3.2:
# `rails new` with its default options (Propshaft, importmap, Turbo, Stimulus,
# Solid Cache/Queue/Cable, Thruster, Kamal, the Dockerfile), git left out,
# then a scaffold (`Thing`: an HTML form with a CSRF token, JSON views by
# jbuilder) and the production databases migrated. Nothing of it is
# committed: it lands in tmp/apps/rails8-DIGEST (gitignored), DIGEST being
# that of test/apps/rails8/Gemfile.lock and of the scripts, reused while they
# stay the same. Prints the app's directory.
#
#   BUNDLE_GEMFILE=test/apps/rails8/Gemfile bundle exec ruby test/apps/rails8/generate.rb
#
# `rails new` runs its own `bundle install` and the installers that follow
# it (skipping the bundle would skip them too: no Solid Queue config, no
# importmap); template.rb hands it the committed lockfile first, and aborts
# when the generated Gemfile names a gem that test/apps/rails8/Gemfile
# lacks. The app then loads the committed bundle (config/boot.rb).

require "digest"
require "fileutils"
require "rbconfig"

ROOT = File.expand_path("../../..", __dir__)
GEMFILE = File.join(__dir__, "Gemfile")
TEMPLATE = File.join(__dir__, "template.rb")
# What the installers that run after `rails new`'s bundle write: their absence
# means a step was skipped.
EXPECTED = %w[Dockerfile bin/thrust bin/kamal config/deploy.yml config/importmap.rb config/queue.yml config/cache.yml
  config/cable.yml db/queue_schema.rb db/cache_schema.rb app/javascript/controllers/index.js].freeze

digest = Digest::SHA256.hexdigest([GEMFILE, "#{GEMFILE}.lock", __FILE__, TEMPLATE].map { |path| File.read(path) }.join)[0, 12]
target = File.join(ROOT, "tmp", "apps", "rails8-#{digest}")

if File.exist?(File.join(target, ".generated"))
  puts target
  exit
end

abort "generate.rb: run it under the Rails 8 apps bundle (BUNDLE_GEMFILE=#{GEMFILE} bundle exec ...)" unless ENV["BUNDLE_GEMFILE"] && File.expand_path(ENV["BUNDLE_GEMFILE"]) == GEMFILE

# Built aside and renamed into place: a run that dies halfway, or two runs at
# once, never leave a half-made app behind the final name.
work = "#{target}.#{Process.pid}.tmp"
FileUtils.rm_rf(work)
FileUtils.mkdir_p(File.dirname(work))

def run(*command, chdir:, env: {})
  warn "generate.rb: #{command.join(" ")}"
  system({"BUNDLE_GEMFILE" => GEMFILE, "RAILS_ENV" => nil}.merge(env), *command, chdir: chdir, in: File::NULL, out: $stderr) ||
    abort("generate.rb: failed (#{$?.inspect}): #{command.join(" ")}")
end

def edit(path)
  text = File.read(path)
  changed = yield(text.dup)
  abort "generate.rb: #{path} did not change: the generator's output moved" if changed == text
  File.write(path, changed)
end

# @return [Hash{String => String}] gem name => version (platform left out) of a lockfile
def locked(path)
  File.read(path).scan(/^    (\S+) \(([^)]+)\)$/).to_h { |name, version| [name, version.split("-").first] }
end

# `rails new` as a user runs it (`rails _VERSION_ new`): outside any bundle,
# so that its `bundle install` and installers work on the app's own Gemfile.
railties = locked("#{GEMFILE}.lock").fetch("railties")
rails_new = ["-e", "gem 'railties', '= #{railties}'; load Gem.bin_path('railties', 'rails', '= #{railties}')", "--"]
warn "generate.rb: rails _#{railties}_ new #{work}"
Bundler.with_unbundled_env do
  system({"HERD_APPS_GEMFILE" => GEMFILE, "CI" => "true"}, RbConfig.ruby, *rails_new, "new", work, "--no-rc", "--skip-git",
    "--name=herd_rails_app", "--template=#{TEMPLATE}", chdir: ROOT, in: File::NULL, out: $stderr) ||
    abort("generate.rb: rails new failed (#{$?.inspect})")
end
missing = EXPECTED.reject { |path| File.exist?(File.join(work, path)) }
abort "generate.rb: rails new wrote no #{missing.join(", ")}: one of its steps did not run" unless missing.empty?

# The app ran the committed versions; from now on it loads the committed bundle.
drift = locked(File.join(work, "Gemfile.lock")).reject { |name, version| locked("#{GEMFILE}.lock")[name] == version }
abort "generate.rb: the app's bundle differs from #{GEMFILE}.lock: #{drift.inspect}" unless drift.empty?
FileUtils.rm_f([File.join(work, "Gemfile"), File.join(work, "Gemfile.lock")])
edit(File.join(work, "config", "boot.rb")) do |text|
  text.sub(/^ENV\["BUNDLE_GEMFILE"\] \|\|= .*$/) { %(ENV["BUNDLE_GEMFILE"] ||= #{GEMFILE.inspect}) }
end

run(RbConfig.ruby, "bin/rails", "generate", "scaffold", "Thing", "name:string", "notes:text", "--quiet", chdir: work)
edit(File.join(work, "app", "models", "thing.rb")) do |text|
  text.sub(/^end$/, "  validates :name, presence: true\nend")
end
edit(File.join(work, "config", "routes.rb")) do |text|
  text.sub(/^  resources :things$/, %(  resources :things\n  root "things#index"))
end

# The schemas (the app's, Solid Cache's, Queue's and Cable's) go into
# database files that each test copies (with the app).
run(RbConfig.ruby, "bin/rails", "db:prepare", chdir: work, env: {"RAILS_ENV" => "production"})
%w[production production_cache production_queue production_cable].each do |name|
  abort "generate.rb: no storage/#{name}.sqlite3" unless File.file?(File.join(work, "storage", "#{name}.sqlite3"))
end

File.write(File.join(work, ".generated"), "#{digest}\n")
FileUtils.rm_rf(target)
File.rename(work, target)
puts target
