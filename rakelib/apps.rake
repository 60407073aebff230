# frozen_string_literal: true

require "rake/testtask"

# Real apps under `herd serve` (test/apps/): a Rails 7.2 app and a Sinatra 4
# app, with their own bundle (test/apps/Gemfile). Not part of `rake test`.
namespace :test do
  Rake::TestTask.new(:apps) do |t|
    t.description = "Rails and Sinatra apps under herd serve through reforks (run test/apps/setup first)"
    t.libs << "test" << "lib"
    t.test_files = FileList["test/apps/**/*_test.rb"]
    t.warning = false
  end
end
