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

require "rbconfig"
require_relative "../support/generated_app"

GEMFILE = File.join(__dir__, "Gemfile")
TEMPLATE = File.join(__dir__, "template.rb")
# What the installers that run after `rails new`'s bundle write: their absence
# means a step was skipped.
EXPECTED = %w[Dockerfile bin/thrust bin/kamal config/deploy.yml config/importmap.rb config/queue.yml config/cache.yml
  config/cable.yml db/queue_schema.rb db/cache_schema.rb app/javascript/controllers/index.js].freeze

# @return [Hash{String => String}] gem name => version (platform left out) of a lockfile
def locked(path)
  File.read(path).scan(/^    (\S+) \(([^)]+)\)$/).to_h { |name, version| [name, version.split("-").first] }
end

app = Herd::GeneratedApp.new("rails8", gemfile: GEMFILE,
  inputs: [GEMFILE, "#{GEMFILE}.lock", __FILE__, TEMPLATE, File.expand_path("../support/generated_app.rb", __dir__)])
app.generate do
  # `rails new` as a user runs it (`rails _VERSION_ new`): outside any bundle,
  # so that its `bundle install` and installers work on the app's own Gemfile.
  railties = locked("#{GEMFILE}.lock").fetch("railties")
  rails_new = ["-e", "gem 'railties', '= #{railties}'; load Gem.bin_path('railties', 'rails', '= #{railties}')", "--"]
  warn "generate.rb: rails _#{railties}_ new #{app.work}"
  Bundler.with_unbundled_env do
    system({"HERD_APPS_GEMFILE" => GEMFILE, "CI" => "true"}, RbConfig.ruby, *rails_new, "new", app.work, "--no-rc", "--skip-git",
      "--name=herd_rails_app", "--template=#{TEMPLATE}", chdir: Herd::GeneratedApp::ROOT, in: File::NULL, out: $stderr) ||
      abort("generate.rb: rails new failed (#{$?.inspect})")
  end
  missing = EXPECTED.reject { |path| File.exist?(File.join(app.work, path)) }
  abort "generate.rb: rails new wrote no #{missing.join(", ")}: one of its steps did not run" unless missing.empty?

  # The app ran the committed versions; from now on it loads the committed bundle.
  drift = locked(File.join(app.work, "Gemfile.lock")).reject { |name, version| locked("#{GEMFILE}.lock")[name] == version }
  abort "generate.rb: the app's bundle differs from #{GEMFILE}.lock: #{drift.inspect}" unless drift.empty?
  app.use_committed_bundle

  app.scaffold_things
  # The app's schema, Solid Cache's, Queue's and Cable's.
  app.prepare_databases(%w[production production_cache production_queue production_cable])
end
