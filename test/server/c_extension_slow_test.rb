# frozen_string_literal: true

require "test_helper"
require "support/server_harness"

# A real server with herd's C extension in use (accept, response headers,
# scoreboard) and with it switched off: a client and the monitor see the
# same in both.
class CExtensionServerTest < Herd::Test
  include Herd::ServerTest

  APP = <<~RUBY
    run ->(env) {
      sleep 30 if env["PATH_INFO"] == "/stuck"
      [200, {"content-type" => "text/plain", "x-remote" => env["REMOTE_ADDR"]}, ["pid=\#{Process.pid}"]]
    }
  RUBY

  def setup
    require "herd/http"
    skip "herd's C extension is not built (`rake compile`)" unless Herd::HTTP::HeadScanner.built?
  end

  def test_with_the_extension
    check_server({}, "in C")
  end

  def test_with_the_extension_switched_off
    check_server({"HERD_HEAD_SCANNER" => "0"}, "in Ruby: HERD_HEAD_SCANNER=0")
  end

  private

  def check_server(env, boot_line)
    server = serve(app: APP, config: "workers 1\ntimeout 2\n", env: env)
    server.wait_for(/response headers checked #{Regexp.escape(boot_line)}/)
    response = server.request("GET /?q=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert_match(%r{\AHTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nx-remote: 127.0.0.1\r\ncontent-length: \d+\r\ndate: [^\r]+\r\nconnection: close\r\n\r\npid=\d+\z}, response)
    # The monitor reads the stuck request's line from the scoreboard.
    before = server.mark
    stuck = Thread.new do
      server.request("GET /stuck?x=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    rescue SystemCallError, IOError
      nil # the worker is killed under it
    end
    server.wait_for(%r{worker 0 \(gen 0\), pid \d+ timed out after 2s on GET /stuck\?x=1; killing it}, after: before)
    server.wait_for(/worker 0 \(gen 0\), pid \d+ ready/, after: before)
    stuck.join(10)
    assert_match(/x-remote: 127\.0\.0\.1/, server.request("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
  end
end
