# frozen_string_literal: true

# The `rails new -m` template of test/apps/rails8/generate.rb. Rails applies
# it after writing the app's files and before its own `bundle install`:
# it aborts when the generated Gemfile names a gem that the committed one
# (HERD_APPS_GEMFILE) lacks, and gives the app the committed lockfile, so
# that the installers `rails new` runs afterwards (importmap, Turbo,
# Stimulus, Kamal, Solid Cache/Queue/Cable) run on the committed versions.

require "fileutils"

committed = ENV.fetch("HERD_APPS_GEMFILE")
gem_names = ->(text) { text.scan(/^\s*gem\s+["']([^"']+)["']/).flatten }
generated = gem_names.call(File.read(File.join(destination_root, "Gemfile")))
missing = generated - gem_names.call(File.read(committed))
unless missing.empty?
  abort "template.rb: the generated Gemfile names #{missing.join(", ")}, which #{committed} lacks: add them (and bundle lock) " \
    "so that the app stays as `rails new` makes it"
end

FileUtils.cp("#{committed}.lock", File.join(destination_root, "Gemfile.lock"))
