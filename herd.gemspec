# frozen_string_literal: true

require_relative "lib/herd/version"

Gem::Specification.new do |spec|
  spec.name = "herd"
  spec.version = Herd::VERSION
  spec.authors = ["herd developers"]
  spec.summary = "Copy-on-write-friendly multiprocessing for Ruby"
  spec.description = "A fork that keeps memory shared, a fork pool (Herd.map), " \
    "a reforking Rack server and the instruments (herd mem) that show where memory goes."
  spec.license = "MIT"
  spec.required_ruby_version = ">= 3.1"
  spec.files = Dir["lib/**/*.rb", "ext/**/*.{c,rb}", "exe/*", "docs/**/*.md", "README.md", "ARCHITECTURE.md", "CHANGELOG.md", "LICENSE"]
  # herd's C extension; optional: without a compiler the gem installs and
  # Ruby does its work (ext/herd/native/extconf.rb).
  spec.extensions = ["ext/herd/native/extconf.rb"]
  spec.bindir = "exe"
  spec.executables = ["herd"]
  spec.require_paths = ["lib"]
  spec.metadata["rubygems_mfa_required"] = "true"

  # Progress bars for Herd.map(progress: true): the one every Ruby CLI already knows.
  spec.add_dependency "ruby-progressbar", "~> 1.13"
  # prctl, mmap and glibc's malloc without a C extension: a default gem up to
  # Ruby 3.4, a bundled one from Ruby 4.0 on, so it is declared.
  spec.add_dependency "fiddle", "~> 1.1"
  # The server speaks Rack: Rack::Builder loads config.ru, Rack::Lint checks our env in tests.
  spec.add_dependency "rack", ">= 2.2", "< 4"
end
