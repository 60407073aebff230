# frozen_string_literal: true

require "test_helper"
require "support/server_harness"
require_relative "../fixtures/http/malformed_requests"

# The HTTP layer through the real server: what a client sees, and that a
# worker survives every bad request.
class ServerHTTPTest < Herd::Test
  LINT_APP = <<~RUBY
    require "rack/lint"
    app = ->(env) {
      case env["PATH_INFO"]
      when "/echo" then [200, {"content-type" => "text/plain"}, [env["rack.input"].read]]
      when "/hijack"
        io = env["rack.hijack"].call
        io.write("HTTP/1.1 200 OK\\r\\nconnection: close\\r\\n\\r\\nhijacked")
        io.close
        [200, {}, []]
      else [200, {"content-type" => "text/plain"}, ["pid=\#{Process.pid}"]]
      end
    }
    run ->(env) { env["PATH_INFO"] == "/hijack" ? app.call(env) : Rack::Lint.new(app).call(env) }
  RUBY

  def setup
    @server = Herd::ServerHarness.new(app: LINT_APP, config: "workers 1\nhttp read_timeout: 1, max_body: 1_000_000\n")
    @pid = worker_pid
  end

  def teardown
    @server&.cleanup
  end

  def worker_pid
    @server.get("/")[/pid=(\d+)/, 1]
  end

  def test_the_malformed_request_corpus_gets_its_statuses_and_the_worker_keeps_serving
    cases = Herd::HTTPFixtures::MalformedRequests::ALL.reject { |c| c[:options].any? || c[:status] == 408 || c[:close_write] }
    assert_operator cases.size, :>=, 40
    cases.each do |example|
      response = @server.request(example[:request])
      assert_match(%r{\AHTTP/1.1 #{example[:status]} }, response, example[:name])
      assert_match(/^connection: close\r$/i, response, example[:name])
    end
    assert_equal @pid, worker_pid, "the same worker served every case and is still serving"
  end

  def test_a_body_over_max_body_is_refused_with_413
    response = @server.request("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n")
    assert_match(%r{\AHTTP/1.1 413 }, response)
  end

  def test_chunked_upload_and_large_body
    chunked = @server.request("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
    assert_match(/\r\n\r\nabcde\z/, chunked)
    body = "x" * 500_000 # above the spool threshold: read from a tempfile
    large = @server.request("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: #{body.bytesize}\r\n\r\n#{body}")
    assert_equal body, large.split("\r\n\r\n", 2).last
  end

  def test_hijack
    assert_equal "HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nhijacked", @server.get("/hijack")
    assert_equal @pid, worker_pid
  end
end
