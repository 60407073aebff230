# frozen_string_literal: true

require "test_helper"

class DemoCommandTest < Herd::Test
  def test_demo_shows_both_forks_and_the_saving
    out, err, status = herd_cli("demo", "fork", "--objects", "300000", "--children", "1")
    assert status.success?, err
    assert_match(/After one GC in each child, plain fork:/, out)
    assert_match(/After one GC in each child, herd's fork:/, out)
    assert_match(/herd demo child \(herd's fork\)/, out)
    copied = out[/Each child copied ([\d.]+) MiB after a plain fork and ([\d.]+) MiB after herd's fork/]
    assert copied, out
    assert_operator Float(Regexp.last_match(1)), :>, Float(Regexp.last_match(2))
    assert_includes out, "#{RUBY_ENGINE} #{RUBY_VERSION}, YJIT ", "the figures name their Ruby"
  end

  def test_bad_options_are_one_line_usage_errors
    _, err, status = herd_cli("demo", "fork", "--children", "0")
    assert_equal 2, status.exitstatus
    assert_equal 1, err.lines.size, err
    _, err, status = herd_cli("demo", "fork", "--objects", "many")
    assert_equal 2, status.exitstatus
    assert_match(/invalid argument: --objects many/, err)
  end

  def test_unknown_command_and_help
    _, err, status = herd_cli("frobnicate")
    assert_equal 2, status.exitstatus
    assert_match(/unknown command "frobnicate"/, err)
    out, _, status = herd_cli("help")
    assert status.success?
    assert_match(/mem .*demo/m, out)
    out, = herd_cli("--version")
    assert_equal "herd #{Herd::VERSION}\n", out
  end
end
