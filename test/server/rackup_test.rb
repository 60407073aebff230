# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "support/server_process"

# `rackup -s herd` (and so `rails server -u herd`) finds herd's handler.
class ServerRackupTest < Herd::Test
  # Runs rackup -s herd in `dir`; returns the log lines up to "ready", and
  # the response to GET /.
  def rackup(dir, *args)
    server = Herd::ServerProcess.new([RbConfig.ruby, Gem.bin_path("rackup", "rackup"), "-s", "herd", *args, "config.ru"],
      dir: dir, env: {"RUBYLIB" => File.join(ROOT, "lib")})
    server.ready
    lines = server.lines
    lines = lines.first(lines.index { |line| line.include?("ready: ") } + 1)
    response = server.get("/")
    assert server.stop.success?
    [lines, response]
  ensure
    server&.cleanup
  end

  def in_app_dir
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "config.ru"), %(run ->(env) { [200, {"content-type" => "text/plain"}, ["via rackup"]] }\n))
      yield dir
    end
  end

  def test_rackup_serves_with_herd
    in_app_dir do |dir|
      lines, response = rackup(dir, "-p", "0", "-O", "Workers=1")
      assert_match(/via rackup\z/, response)
      assert_match(/ready: 1 workers/, lines.last)
    end
  end

  def test_a_port_flag_replaces_the_config_files_listeners
    in_app_dir do |dir|
      File.write(File.join(dir, "herd.rb"), "workers 1\nlisten 'unix:#{dir}/file.sock'\n")
      lines, = rackup(dir, "-p", "0", "-O", "Config=herd.rb")
      assert_equal 1, lines.grep(/listening on/).size, lines.join
      refute_match(/file\.sock/, lines.join)
      assert_match(/settings: config file herd\.rb, listeners from a flag/, lines.join)
    end
  end

  def test_config_herd_rb_is_read_without_being_named
    in_app_dir do |dir|
      FileUtils.mkdir_p(File.join(dir, "config"))
      File.write(File.join(dir, "config", "herd.rb"), "workers 1\n")
      lines, = rackup(dir, "-p", "0")
      assert_match(/settings: config file config\/herd\.rb/, lines.join)
      assert_match(/ready: 1 workers/, lines.last)
    end
  end
end
