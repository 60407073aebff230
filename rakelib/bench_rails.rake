# frozen_string_literal: true

# The benchmarks on the Rails app of test/apps, with their own bundle
# (bench/rails/Gemfile: the apps bundle plus pitchfork and puma). Once:
#   test/apps/setup && BUNDLE_GEMFILE=bench/rails/Gemfile bundle install
# Not part of `rake bench` (they need that bundle). Arguments go through ARGS,
# e.g. `rake bench:rails ARGS="--rounds 3 --variants"`.
namespace :bench do
  desc "Rails app: Σ PSS (time average, peak, end), req/s and p99 of herd vs Pitchfork, Puma, Puma fork_worker under 20,000 requests (needs test/apps/setup and the bench/rails bundle)"
  task :rails do
    ruby "bench/rails.rb", *ENV.fetch("ARGS", "").split
  end

  desc "HUP reload of herd under load on the Rails app: Σ PSS through the roll against steady + new mold + 10%, failed requests, responses after the roll"
  task :reload do
    ruby "bench/reload.rb", *ENV.fetch("ARGS", "").split
  end

  desc "USR2 refork of herd (and Pitchfork) under load on the Rails app: req/s and p99 of the window that holds it against steady, Σ PSS peak"
  task :refork do
    ruby "bench/refork.rb", *ENV.fetch("ARGS", "").split
  end
end
