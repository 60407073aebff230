# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "herd/cli"
require "herd/cli/serve"

# Short flags mean what they mean in Puma and Unicorn, or are refused.
class ServeFlagsTest < Herd::Test
  def parse(*argv)
    Dir.mktmpdir do |dir|
      Dir.chdir(dir) do
        File.write("config.ru", "run ->(env) { [200, {}, []] }\n")
        Herd::CLI::Serve.new(out: StringIO.new).send(:parse, argv)
      end
    end
  end

  def test_dash_t_is_refused_in_one_line_saying_what_to_type
    _, err, status = herd_cli("serve", "-t", "16")
    assert_equal 2, status.exitstatus
    assert_equal 1, err.lines.size, err
    assert_match(/\Aherd: serve: -t is not a flag of herd serve \(in Puma it sets threads.*--timeout SECONDS/, err)
    _, err, = herd_cli("serve", "-t16")
    assert_match(/-t is not a flag of herd serve/, err)
  end

  def test_a_bad_number_in_an_environment_variable_is_refused_in_one_line
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "config.ru"), "run ->(env) { [200, {}, []] }\n")
      _, err, status = herd_cli("serve", File.join(dir, "config.ru"), "-l", "127.0.0.1:0", env: {"HERD_SCOREBOARD_SLOTS" => "lots"})
      refute status.success?
      assert_equal 1, err.lines.count { |line| line.start_with?("herd:") }, err
      assert_match(/^herd: .*HERD_SCOREBOARD_SLOTS="lots": must be a whole number/, err)
      refute_match(/\.rb:\d+:in /, err, "no backtrace without --debug")
    end
  end

  def test_the_long_timeout_flag_and_no_abbreviations
    assert_equal 16.0, parse("--timeout", "16").timeout
    error = assert_raises(Herd::UsageError) { parse("--time", "16") }
    assert_equal "serve: invalid option: --time", error.message
  end

  def test_bind_takes_a_host_or_pumas_uris
    assert_equal ["127.0.0.1:9000"], parse("-b", "tcp://127.0.0.1:9000").listeners.map(&:address)
    assert_equal ["unix:/tmp/herd-test.sock"], parse("-b", "unix:///tmp/herd-test.sock").listeners.map(&:address)
    assert_equal ["127.0.0.1:9001"], parse("-b", "127.0.0.1", "-p", "9001").listeners.map(&:address)
    assert_equal ["0.0.0.0:9002"], parse("-p", "9002").listeners.map(&:address), "a port alone: every interface, as Puma's -p"
  end
end
