# frozen_string_literal: true

require "json"
require "open3"
require "rbconfig"

# The Rails scaffold of test/apps, served in process (no socket), for the
# benches that fork it themselves (steps.rb, first_pages.rb).
module ScaffoldInProcess
  ROOT = File.expand_path("../..", __dir__)
  # Index, a record, a record's JSON, the index's JSON, the form.
  PAGES = 5

  module_function

  # Generates the app (test/apps/rails/generate.rb, with test/apps' bundle).
  # @return [String] its directory
  def generate
    Open3.capture2("bundle", "exec", "ruby", File.join(ROOT, "test/apps/rails/generate.rb"), chdir: ROOT).first.lines.last.chomp
  end

  # Boots the app in this process (production, quiet log) and herd.
  # @return [Proc] serve.call(i) requests page i % PAGES and raises unless it is a 200
  def boot(app_dir)
    ENV["RAILS_ENV"] = "production"
    ENV["SECRET_KEY_BASE"] ||= "x" * 64
    ENV["RAILS_LOG_LEVEL"] = "warn"
    require File.join(app_dir, "config", "environment")
    require "rack/mock_request"
    require "herd"
    require "herd/memory"
    app = Rails.application
    ids = Thing.order(:id).limit(2).pluck(:id)
    ids = 2.times.map { |i| Thing.create!(name: "thing #{i}", notes: "notes " * 20).id } if ids.size < 2
    paths = ["/things", "/things/#{ids[0]}", "/things/#{ids[1]}.json", "/things.json", "/things/new"]
    lambda do |i|
      path = paths[i % PAGES]
      status, _, body = app.call(Rack::MockRequest.env_for(path, "HTTP_HOST" => "localhost", "REMOTE_ADDR" => "127.0.0.1"))
      body.each { |_| }
      body.close if body.respond_to?(:close)
      raise "status #{status} for #{path}" unless status == 200
    end
  end
end
