# frozen_string_literal: true

require "rake/testtask"

# Real apps under `herd serve` (test/apps/), each Ruby with its own apps
# bundle: Rails 8 (test/apps/rails8/Gemfile) on Ruby >= 3.2, Rails 7.2
# (test/apps/Gemfile) on 3.1, and a Sinatra 4 app. Not part of `rake test`.
namespace :test do
  Rake::TestTask.new(:apps) do |t|
    t.description = "Rails and Sinatra apps under herd serve through reforks; Rails 8 behind Thruster on Ruby >= 3.2 (run test/apps/setup first)"
    t.libs << "test" << "lib"
    files = FileList["test/apps/**/*_test.rb"]
    # Rails 8 needs Ruby 3.2: its deploy test has no app to serve on 3.1.
    files = files.exclude("test/apps/rails8_*_test.rb") if Gem::Version.new(RUBY_VERSION) < Gem::Version.new("3.2")
    t.test_files = files
    t.warning = false
  end
end
