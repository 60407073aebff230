# frozen_string_literal: true

require "test_helper"
require "tmpdir"

# `rackup -s herd` (and so `rails server -u herd`) finds herd's handler.
class ServerRackupTest < Herd::Test
  def test_rackup_serves_with_herd
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "config.ru"), %(run ->(env) { [200, {"content-type" => "text/plain"}, ["via rackup"]] }\n))
      reader, writer = IO.pipe
      rackup = Gem.bin_path("rackup", "rackup")
      pid = Process.spawn({"RUBYLIB" => File.join(ROOT, "lib")}, RbConfig.ruby, rackup, "-s", "herd", "-p", "0",
        "-O", "Workers=1", "config.ru", chdir: dir, err: writer, out: writer, pgroup: true)
      writer.close
      url = nil
      reader.each_line do |line|
        url ||= line[%r{listening on (http://\S+)}, 1]
        break if line.include?("ready: 1 workers")
      end
      assert url, "no listening line"
      port = Integer(url[/(\d+)\z/])
      response = TCPSocket.open("127.0.0.1", port) { |socket| socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n") && socket.read }
      assert_match(/via rackup\z/, response)
      Process.kill(:QUIT, pid)
      _, status = Process.wait2(pid)
      pid = nil
      assert status.success?
    ensure
      if pid
        Process.kill(:KILL, -pid)
        Process.wait(pid)
      end
      reader&.close
    end
  end
end
