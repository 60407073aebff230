# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "herd/server/config"

class ServerConfigFileTest < Herd::Test
  def load(source)
    Dir.mktmpdir do |dir|
      path = File.join(dir, "herd.rb")
      File.write(path, source)
      Herd::Server::Config.new.load_file(path)
    end
  end

  def test_a_typo_names_the_setting_its_line_and_a_guess
    error = assert_raises(Herd::ConfigError) { load("timeout 10\n\nworkerz 4\n") }
    assert_match(/\Aunknown setting `workerz` \(.*herd\.rb:3\); did you mean `workers`\?\z/, error.message)
    refute_match(/Config|DSL|@/, error.message, "no object dump")
  end

  def test_a_word_nothing_like_a_setting_points_to_the_docs
    error = assert_raises(Herd::ConfigError) { load("frobnicate_everything true\n") }
    assert_match(/unknown setting `frobnicate_everything` \(.*herd\.rb:1\); see docs\/CONFIGURATION\.md/, error.message)
  end

  def test_other_errors_say_where
    error = assert_raises(Herd::ConfigError) { load("workers 2\nnil.upcase\n") }
    assert_match(/herd\.rb:2: NoMethodError/, error.message)
  end

  def test_log_and_pid_files
    config = load("stdout_path 'log/out.log'\nstderr_path 'log/err.log'\npidfile 'tmp/herd.pid'\n")
    assert_equal ["log/out.log", "log/err.log", "tmp/herd.pid"], [config.stdout_path, config.stderr_path, config.pidfile]
  end
end
