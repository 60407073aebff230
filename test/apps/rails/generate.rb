# frozen_string_literal: true

# Generates the Rails app that test/apps/rails_test.rb serves: `rails new
# --minimal` with SQLite, a scaffold (`Thing`: an HTML form with a CSRF token,
# JSON views by jbuilder), the production database migrated. Nothing of it
# is committed: it lands in tmp/apps/rails-DIGEST (gitignored), DIGEST being
# that of test/apps/Gemfile.lock and of this file, and is reused while both
# stay the same. Prints the app's directory.
#
#   BUNDLE_GEMFILE=test/apps/Gemfile bundle exec ruby test/apps/rails/generate.rb
#
# Runs under the apps bundle (test/apps/setup installs it); the generated app
# loads the same bundle (config/boot.rb points at test/apps/Gemfile).

require "digest"
require "fileutils"
require "rbconfig"

ROOT = File.expand_path("../../..", __dir__)
GEMFILE = File.join(ROOT, "test", "apps", "Gemfile")
digest = Digest::SHA256.hexdigest(File.read("#{GEMFILE}.lock") + File.read(__FILE__))[0, 12]
target = File.join(ROOT, "tmp", "apps", "rails-#{digest}")

if File.exist?(File.join(target, ".generated"))
  puts target
  exit
end

abort "generate.rb: run it under the apps bundle (BUNDLE_GEMFILE=#{GEMFILE} bundle exec ...)" unless ENV["BUNDLE_GEMFILE"] && File.expand_path(ENV["BUNDLE_GEMFILE"]) == GEMFILE

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

rails = Gem.bin_path("railties", "rails")
run(RbConfig.ruby, rails, "new", work, "--minimal", "--no-rc", "--skip-bundle", "--skip-git", "--skip-keeps",
  "--skip-docker", "--skip-test", "--skip-system-test", "--skip-rubocop", "--skip-brakeman", "--skip-ci",
  "--asset-pipeline=none", "--skip-javascript", "--database=sqlite3", "--name=herd_rails_app", "--quiet", chdir: ROOT)

# The app's gems are test/apps/Gemfile's: no Gemfile of its own.
FileUtils.rm_f(File.join(work, "Gemfile"))
edit(File.join(work, "config", "boot.rb")) do |text|
  text.sub(/^ENV\["BUNDLE_GEMFILE"\] \|\|= .*$/) { %(ENV["BUNDLE_GEMFILE"] ||= #{GEMFILE.inspect}) }
end

# Served over plain HTTP on 127.0.0.1 by the tests.
edit(File.join(work, "config", "environments", "production.rb")) do |text|
  text.sub(/^  config\.force_ssl = true$/, "  config.force_ssl = false # herd's tests talk plain HTTP on 127.0.0.1")
end

# Rails 7.2's template leaves the production database to the deployer.
edit(File.join(work, "config", "database.yml")) do |text|
  text.sub(%r{^  # database: path/to/persistent/storage/production\.sqlite3$}, "  database: storage/production.sqlite3")
end

run(RbConfig.ruby, "bin/rails", "generate", "scaffold", "Thing", "name:string", "notes:text", "--quiet", chdir: work)
edit(File.join(work, "app", "models", "thing.rb")) do |text|
  text.sub(/^end$/, "  validates :name, presence: true\nend")
end
edit(File.join(work, "config", "routes.rb")) do |text|
  text.sub(/^  resources :things$/, %(  resources :things\n  root "things#index"))
end

# The schema goes into a database file that each test copies (with the app).
run(RbConfig.ruby, "bin/rails", "db:prepare", chdir: work, env: {"RAILS_ENV" => "production"})
abort "generate.rb: no production database" unless File.file?(File.join(work, "storage", "production.sqlite3"))

File.write(File.join(work, ".generated"), "#{digest}\n")
FileUtils.rm_rf(target)
File.rename(work, target)
puts target
