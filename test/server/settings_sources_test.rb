# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "herd/server/settings_sources"

# One precedence for every way of starting a server: flags, then the
# environment, then the config file, then defaults.
class ServerSettingsSourcesTest < Herd::Test
  def build(file_source: nil, env: {}, file: nil, **flags)
    Dir.mktmpdir do |dir|
      Dir.chdir(dir) do
        if file_source
          FileUtils.mkdir_p(File.dirname(file || "config/herd.rb"))
          File.write(file || "config/herd.rb", file_source)
        end
        config = Herd::Server::SettingsSources.new(file: file, env: env).build(Herd::Server::Flags.new(**flags))
        [config.workers, config.listeners.map(&:address), config.describe_origins]
      end
    end
  end

  def test_defaults
    workers, listen, origins = build
    assert_equal Herd::CPU.count, workers
    assert_equal ["0.0.0.0:8080"], listen, "every interface, as Unicorn and Puma (docs/CONFIGURATION.md)"
    assert_equal "no config file", origins
  end

  def test_config_herd_rb_is_read_when_it_exists
    assert_equal [3, ["127.0.0.1:9000"], "config file config/herd.rb"], build(file_source: "workers 3\nlisten '127.0.0.1:9000'\n")
  end

  def test_a_named_file_is_read_instead
    workers, = build(file_source: "workers 5\n", file: "elsewhere.rb")
    assert_equal 5, workers
  end

  def test_the_environment_wins_over_the_file
    workers, listen, origins = build(file_source: "workers 3\nlisten 9000\n", env: {"WEB_CONCURRENCY" => "6", "PORT" => "5000"})
    assert_equal [6, ["0.0.0.0:5000"]], [workers, listen]
    assert_equal "config file config/herd.rb, workers from WEB_CONCURRENCY, listeners from PORT", origins
  end

  def test_flags_win_over_everything_and_replace_listeners
    workers, listen, = build(file_source: "workers 3\nlisten 9000\nlisten 9001\n", env: {"WEB_CONCURRENCY" => "6", "PORT" => "5000"},
      workers: 2, port: 3001)
    assert_equal [2, ["0.0.0.0:3001"]], [workers, listen]
  end

  def test_bind_alone_keeps_the_port_of_the_environment_or_the_file
    assert_equal ["0.0.0.0:9000"], build(file_source: "listen 9000\n", host: "0.0.0.0")[1]
    assert_equal ["[::]:5000"], build(env: {"PORT" => "5000"}, host: "::")[1]
    assert_equal ["127.0.0.1:3000", "0.0.0.0:4000"], build(listen: ["127.0.0.1:3000"], port: 4000)[1]
    assert_equal ["localhost:4000"], build(port: 4000, host: "localhost")[1]
  end

  def test_blank_variables_are_ignored_and_bad_ones_refused
    assert_equal ["0.0.0.0:8080"], build(env: {"PORT" => " ", "WEB_CONCURRENCY" => ""})[1]
    error = assert_raises(Herd::ConfigError) { build(env: {"WEB_CONCURRENCY" => "four"}) }
    assert_equal %(WEB_CONCURRENCY must be a whole number of workers, got "four"), error.message
  end
end

# What rackup and rails server pass the handler, turned into flags.
class ServerRackHandlerOptionsTest < Herd::Test
  def flags(options, env: {})
    saved = ENV.to_h.slice("PORT")
    ENV.delete("PORT")
    env.each { |key, value| ENV[key] = value }
    handler = Herd::Server::RackHandler
    [handler.chosen?(options, :Port), handler.chosen?(options, :Host), handler.fallback(options)]
  ensure
    ENV.delete("PORT")
    ENV.update(saved)
  end

  def setup
    require "herd/server/rack_handler"
  end

  def test_rackup_defaults_are_a_fallback_not_flags
    assert_equal [false, false, "localhost:9292"], flags({Port: 9292, Host: "localhost"})
    assert_equal [true, false, "localhost:3001"], flags({Port: 3001, Host: "localhost"})
  end

  def test_rails_says_what_was_typed
    production = {Port: 3000, Host: "0.0.0.0", user_supplied_options: []}
    assert_equal [false, false, "0.0.0.0:3000"], flags(production)
    assert_equal [true, true, "127.0.0.1:0"], flags({Port: 0, Host: "127.0.0.1", user_supplied_options: %i[Port Host]})
  end

  # A port alone means every interface for `herd serve`; through a launcher
  # it keeps the launcher's host, as the launcher would bind it itself.
  def test_a_typed_port_keeps_the_launchers_host
    handler = Herd::Server::RackHandler
    development = handler.flags({Port: 3001, Host: "localhost", user_supplied_options: [:Port]})
    assert_equal [3001, "localhost"], [development.port, development.host]
    rackup = handler.flags({Port: 9000, Host: "localhost"})
    assert_equal [9000, "localhost"], [rackup.port, rackup.host]
    assert_nil handler.flags({Port: 9292, Host: "localhost"}).host, "nothing typed: the fallback"
  end

  def test_PORT_reported_by_rails_as_typed_stays_the_environment
    assert_equal [false, false, "0.0.0.0:5000"],
      flags({Port: 5000, Host: "0.0.0.0", user_supplied_options: [:Port]}, env: {"PORT" => "5000"})
  end
end
