# frozen_string_literal: true

require "test_helper"
require "tmpdir"

# `herd sidekiq`'s own flags and what it refuses, without Sidekiq
# (test/apps/sidekiq_test.rb runs it with Sidekiq and Redis).
class SidekiqFlagsTest < Herd::Test
  def test_sidekiqs_options_before_the_double_dash_are_refused_in_one_line
    _, err, status = herd_cli("sidekiq", "-w", "2", "-q", "critical")
    assert_equal 2, status.exitstatus
    assert_equal 1, err.lines.size, err
    assert_includes err, "Sidekiq's own options go after --"
  end

  def test_help_names_the_double_dash
    out, _, status = herd_cli("sidekiq", "--help")
    assert status.success?
    assert_includes out, "-- sidekiq's own options"
  end

  def test_a_config_file_with_a_bad_value_is_refused_in_one_line
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "jobs.rb"), "timeout 0\n")
      _, err, status = herd_cli("sidekiq", "-c", File.join(dir, "jobs.rb"), "-w", "1")
      assert_equal 1, status.exitstatus
      assert_equal 1, err.lines.size, err
      assert_includes err, "timeout must be false or a number of seconds > 0"
    end
  end

  def test_without_sidekiq_the_mold_says_what_to_add
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "jobs.rb"), "")
      _, err, status = herd_cli("sidekiq", "-w", "1", "--", "-r", "./jobs.rb", chdir: dir,
        env: {"RUBYOPT" => "-rbundler/setup", "BUNDLE_GEMFILE" => File.join(Herd::Test::ROOT, "Gemfile")})
      refute status.success?
      assert_match(/herd sidekiq: cannot load Sidekiq .*add `gem "sidekiq"`/, err)
    end
  end
end
