# frozen_string_literal: true

require_relative "support/app_scenario"

# `rails server -u herd`, as a Rails user starts it: no herd command line,
# so config/herd.rb is read without being named, and PORT/WEB_CONCURRENCY
# and rails' own -p/-b follow one precedence (flags, environment, file).
class RailsServerTest < Herd::Test
  def self.test_timeout
    180
  end

  def teardown
    @server&.cleanup
  end

  def test_rails_server_reads_config_herd_rb_and_honours_its_flags_and_the_environment
    @server = Herd::AppServer.new(app: Herd::AppServer.rails_app, config_path: "config/herd.rb",
      config: "workers 1\nlisten 9\nrefork_after [1000]\n",
      env: {"RAILS_ENV" => "production", "WEB_CONCURRENCY" => "2"},
      command: ["bundle", "exec", "rails", "server", "-u", "herd", "-b", "127.0.0.1", "-p", "0"])
    @server.wait_for(/monitor: settings: config file config\/herd\.rb, workers from WEB_CONCURRENCY, listeners from a flag/)
    @server.wait_for(/monitor: ready: 2 workers serving http:\/\/127\.0\.0\.1:#{@server.port}$/)
    assert_equal 1, @server.lines.grep(/listening on/).size, "rails' -p replaces the file's listen"
    assert_equal "200", @server.http(:get, "/things").code
    assert_equal 0, @server.stop.exitstatus
  end
end
