# frozen_string_literal: true

require "test_helper"
require "support/server_harness"

# A real server with herd's C extension in use (accept, response headers,
# scoreboard) and with it switched off: a client and the monitor see the
# same in both.
class CExtensionServerTest < Herd::Test
  include Herd::ServerTest

  APP = <<~RUBY
    require "json"
    run ->(env) {
      sleep 30 if env["PATH_INFO"] == "/stuck"
      if env["PATH_INFO"] == "/env"
        # Every entry but the objects that differ per process or request.
        shown = env.reject { |key, _| %w[rack.errors rack.input rack.hijack rack.response_finished].include?(key) }
        dump = shown.sort.map { |key, value| [key, value.inspect, value.is_a?(String) ? value.encoding.name : value.class.name] }
        body = env["rack.input"].read
        return [200, {"content-type" => "application/json"}, [JSON.generate(env: dump, body: body, input: env["rack.input"].class.name,
          finished: env["rack.response_finished"].class.name, hijack: env["rack.hijack"].respond_to?(:call))]]
      end
      [200, {"content-type" => "text/plain", "x-remote" => env["REMOTE_ADDR"]}, ["pid=\#{Process.pid}"]]
    }
  RUBY

  def setup
    require "herd/http"
    require "json"
    skip "herd's C extension is not built (`rake compile`)" unless Herd::HTTP::HeadScanner.built?
  end

  def test_with_the_extension
    check_server({}, "in C")
  end

  def test_with_the_extension_switched_off
    check_server({"HERD_C_EXTENSION" => "0"}, "in Ruby: HERD_C_EXTENSION=0")
  end

  # What an application sees of a request does not depend on the path
  # that read it: in C (HeadScanner.receive: a head alone, whose body comes
  # after it; or handed to the Ruby reader: a head with its body in one
  # write, or one the Ruby parser must decide) or in Ruby alone.
  def test_the_env_is_the_same_whichever_path_read_the_request
    requests = {
      get: ["GET /env?q=1&r=%20 HTTP/1.1\r\nHost: example.com:8080\r\nUser-Agent: t\r\nX-Obs: caf\xC3\xA9\r\n\r\n".b],
      body_after_head: ["POST /env HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n", "hello"],
      body_with_head: ["POST /env HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"],
      ruby_parser: ["GET /env HTTP/1.1\r\nHost: [::1]:80\r\nAccept: a\r\nAccept: b\r\n\r\n"],
      http10: ["GET /env HTTP/1.0\r\n\r\n"]
    }
    seen = [{}, {"HERD_C_EXTENSION" => "0"}].map do |env|
      server = serve(app: APP, config: "workers 1\n", env: env)
      responses = requests.transform_values do |pieces|
        response = JSON.parse(send_in_pieces(server, pieces).split("\r\n\r\n", 2).last)
        # Each server has a port of its own.
        response["env"].each { |entry| entry[1] = "(port)" if entry[0] == "SERVER_PORT" }
        response
      end
      server.cleanup
      responses
    end
    with_c, in_ruby = seen
    requests.each_key { |name| assert_equal in_ruby[name], with_c[name], name.to_s }
    assert_equal "hello", with_c[:body_after_head]["body"]
    assert_includes with_c[:get]["env"], ["REQUEST_METHOD", '"GET"', "UTF-8"]
    assert_equal [true, "Array"], [with_c[:get]["hijack"], with_c[:get]["finished"]]
  end

  private

  # Each piece in a write of its own, the next once the worker has read the first.
  def send_in_pieces(server, pieces)
    socket = TCPSocket.new("127.0.0.1", server.port)
    pieces.each_with_index do |piece, index|
      sleep 0.2 if index.positive? # the worker's first read must not see this piece
      socket.write(piece)
    end
    socket.read
  ensure
    socket&.close
  end

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
