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

require "rbconfig"
require_relative "../support/generated_app"

GEMFILE = File.expand_path("../Gemfile", __dir__)
app = Herd::GeneratedApp.new("rails", gemfile: GEMFILE, inputs: ["#{GEMFILE}.lock", __FILE__, File.expand_path("../support/generated_app.rb", __dir__)])
app.generate do
  rails = Gem.bin_path("railties", "rails")
  app.run(RbConfig.ruby, rails, "new", app.work, "--minimal", "--no-rc", "--skip-bundle", "--skip-git", "--skip-keeps",
    "--skip-docker", "--skip-test", "--skip-system-test", "--skip-rubocop", "--skip-brakeman", "--skip-ci",
    "--asset-pipeline=none", "--skip-javascript", "--database=sqlite3", "--name=herd_rails_app", "--quiet", chdir: Herd::GeneratedApp::ROOT)
  app.use_committed_bundle

  # Served over plain HTTP on 127.0.0.1 by the tests.
  app.edit("config", "environments", "production.rb") do |text|
    text.sub(/^  config\.force_ssl = true$/, "  config.force_ssl = false # herd's tests talk plain HTTP on 127.0.0.1")
  end
  # Rails 7.2's template leaves the production database to the deployer.
  app.edit("config", "database.yml") do |text|
    text.sub(%r{^  # database: path/to/persistent/storage/production\.sqlite3$}, "  database: storage/production.sqlite3")
  end

  app.scaffold_things
  app.prepare_databases(%w[production])
end
