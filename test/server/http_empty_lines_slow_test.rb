# frozen_string_literal: true

require "test_helper"
require "support/server_harness"
require "support/kept_connections"

# RFC 9112 §2.2 through a real server with `keep_alive`: the empty line a
# client sends after a POST body, in the body's write or before its next
# request, is dropped (4 at most), with the C first read and in Ruby alike.
class ServerHTTPEmptyLinesSlowTest < Herd::Test
  include Herd::ServerTest
  include Herd::KeptConnections

  APP = <<~RUBY
    run ->(env) { [200, {"content-type" => "text/plain"}, ["\#{env["PATH_INFO"]} \#{env["rack.input"].read}"]] }
  RUBY

  def keep_alive_server(seconds: 5, env: {}, read_timeout: 2)
    serve(app: APP, config: "workers 1\nhttp keep_alive: #{seconds}, read_timeout: #{read_timeout}\n", env: env)
  end

  def test_empty_lines_after_a_post_body_keep_the_connection_in_c_and_in_ruby
    [{}, {"HERD_C_EXTENSION" => "0"}].each do |env|
      server = keep_alive_server(env: env)
      socket = connect(server)
      exchanges = [
        ["POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", "/a hi"],
        ["\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n", "/b "], # the issue's sequence
        ["POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi\r\n", "/c hi"], # the CRLF in the body's write
        ["\r\n\r\n\r\n\r\nGET /d HTTP/1.1\r\nHost: x\r\n\r\n", "/d "],
        [["\r\n", "\r\nGET /e HTTP/1.2\r\nHost: x\r\n\r\n"], "/e "] # in two writes
      ]
      exchanges.each do |request, body|
        Array(request).each { |piece| socket.write(piece) }
        head, got = read_response(socket)
        assert_match(%r{\AHTTP/1.1 200 OK\r\n}, head, "#{env.inspect} #{request.inspect}")
        refute_match(/^connection:/i, head, "kept open: #{request.inspect}")
        assert_equal body, got
      end
      socket.write("#{"\r\n" * 5}GET /f HTTP/1.1\r\nHost: x\r\n\r\n")
      response = Timeout.timeout(10) { socket.read }
      assert_match(%r{\AHTTP/1.1 400 }, response, "one empty line too many: #{env.inspect}")
      assert_match(/\r\nconnection: close\r\n/, response)
      server.cleanup
    end
  end

  # Empty lines are no request: a kept connection that sends only them is
  # still idle, and closed after its idle time without a 408.
  def test_a_kept_connection_that_sends_only_empty_lines_stays_idle
    server = keep_alive_server(seconds: 1, read_timeout: 30)
    socket = connect(server)
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    read_response(socket)
    socket.write("\r\n\r\n")
    assert_equal "", Timeout.timeout(10) { socket.read }, "closed after the idle time, nothing written"
  end
end
