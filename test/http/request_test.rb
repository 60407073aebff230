# frozen_string_literal: true

require "test_helper"
require_relative "../fixtures/http/socket_driver"

module Herd
  # What the application sees of a request: the env (checked by Rack::Lint,
  # which wraps every app here) and rack.input.
  class HTTPRequestTest < Test
    include HTTPDriver

    # Records the env (copied, so Lint's wrappers stay out) and the body.
    class Recorder
      attr_reader :env, :body, :input

      def call(env)
        @env = env.dup
        @input = env["rack.input"]
        @body = env["rack.input"].read
        [200, {"content-type" => "text/plain"}, ["ok"]]
      end
    end

    def test_env_of_a_get
      app = Recorder.new
      served = serve("GET /a/b?c=1 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: test\r\nAccept: */*\r\n\r\n", app: app)

      assert_equal 200, served.status
      assert_nil served.exchange.error
      env = app.env
      expected = {
        "REQUEST_METHOD" => "GET", "SCRIPT_NAME" => "", "PATH_INFO" => "/a/b", "QUERY_STRING" => "c=1",
        "SERVER_NAME" => "localhost", "SERVER_PORT" => "8080", "SERVER_PROTOCOL" => "HTTP/1.1",
        "SERVER_SOFTWARE" => "herd/#{Herd::VERSION}", "REMOTE_ADDR" => "127.0.0.1", "HTTP_HOST" => "example.com",
        "HTTP_USER_AGENT" => "test", "HTTP_ACCEPT" => "*/*", "rack.url_scheme" => "http", "rack.hijack?" => true
      }
      assert_equal expected, env.slice(*expected.keys)
      assert_equal [], env["rack.response_finished"]
      refute env.key?("CONTENT_LENGTH")
      refute env.key?("rack.early_hints"), "early hints are off by default"
      assert_equal "", app.body
    end

    def test_on_request_is_called_with_method_and_target_before_the_app
      order = []
      app = ->(env) { order << :app and [200, {}, []] }
      client, server = UNIXSocket.pair
      client.write("DELETE /items/7?force=1 HTTP/1.1\r\nHost: x\r\n\r\n")
      HTTP::Handler.new(Rack::Lint.new(app)).call(server, remote_addr: "::1", server_name: "localhost", server_port: 80) do |method, target|
        order << [method, target]
      end

      assert_equal [["DELETE", "/items/7?force=1"], :app], order
    ensure
      client&.close
    end

    def test_post_with_content_length
      app = Recorder.new
      served = serve("POST /form HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\n\r\na=1&b=2", app: app)

      assert_equal 200, served.status
      assert_equal "a=1&b=2", app.body
      assert_equal Encoding::BINARY, app.body.encoding
      assert_equal "application/x-www-form-urlencoded", app.env["CONTENT_TYPE"]
      assert_equal "7", app.env["CONTENT_LENGTH"]
      refute app.env.key?("HTTP_CONTENT_LENGTH")
    end

    def test_body_in_many_small_pieces
      app = Recorder.new
      body = "x" * 1000
      pieces = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n#{body}".chars.each_slice(97).map(&:join)
      served = serve(pieces, app: app)

      assert_equal 200, served.status
      assert_equal body, app.body
    end

    def test_chunked_upload_with_trailers
      app = Recorder.new
      request = "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n" \
        "5\r\nhello\r\n1;ext=1;quoted=\"a b\"\r\n \r\nA\r\n0123456789\r\n0\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n"
      served = serve(request, app: app)

      assert_equal 200, served.status, served.log
      assert_equal "hello 0123456789", app.body
      assert_equal "16", app.env["CONTENT_LENGTH"], "the decoded length"
      refute app.env.key?("HTTP_TRANSFER_ENCODING"), "the application gets a decoded body"
      assert_equal({"HTTP_X_CHECKSUM" => "abc", "HTTP_X_OTHER" => "1"}, app.env["herd.trailers"])
    end

    def test_chunked_upload_without_trailers
      app = Recorder.new
      serve("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", app: app)

      assert_equal "abc", app.body
      assert_equal({}, app.env["herd.trailers"])
    end

    def test_small_body_stays_in_memory
      app = Recorder.new
      serve("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", app: app, lint: false)

      assert_kind_of StringIO, app.input
    end

    def test_large_body_goes_to_a_rewindable_tempfile
      body = Random.new(1).bytes(200_000)
      seen = nil
      app = lambda do |env|
        input = env["rack.input"]
        first = input.read
        input.rewind
        seen = {class: input.class, first: first, again: input.read, path: input.respond_to?(:path) && input.path}
        [200, {}, []]
      end
      served = serve(["POST / HTTP/1.1\r\nHost: x\r\nContent-Length: #{body.bytesize}\r\n\r\n", body], app: app, lint: false)

      assert_equal 200, served.status
      assert_equal File, seen[:class]
      assert_equal body, seen[:first]
      assert_equal body, seen[:again]
      refute File.exist?(seen[:path]), "the spool file is unlinked at once"
    end

    def test_chunked_body_spills_to_a_tempfile_past_the_threshold
      chunks = Array.new(4) { |i| i.to_s * 100 }
      encoded = chunks.map { |c| "#{c.bytesize.to_s(16)}\r\n#{c}\r\n" }.join
      seen = nil
      app = ->(env) { seen = [env["rack.input"].class, env["rack.input"].read] and [200, {}, []] }
      serve("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n#{encoded}0\r\n\r\n", app: app, lint: false, options: {body_spool_threshold: 250})

      assert_equal [File, chunks.join], seen
    end

    def test_lint_accepts_the_input
      app = lambda do |env|
        input = env["rack.input"]
        line = input.gets
        [200, {}, [line, "|", input.read(2), "|", input.read]]
      end
      served = serve("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\nab\ncd\nef", app: app)

      assert_equal "ab\n|cd|\nef", served.body, served.errors
    end

    def test_expect_100_continue
      app = Recorder.new
      served = serve("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", app: app) do |client|
        assert_equal "HTTP/1.1 100 Continue\r\n\r\n", client.read(25)
        client.write("hello")
      end

      assert_equal 200, served.status
      assert_equal "hello", app.body
    end

    def test_no_100_continue_without_a_body_or_from_http10
      refute_includes serve("GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n").raw, "100 Continue"
      refute_includes serve("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx").raw, "100 Continue"
    end

    def test_http10_request
      app = Recorder.new
      served = serve("GET /old HTTP/1.0\r\n\r\n", app: app)

      assert_equal 200, served.status
      assert_equal "HTTP/1.0", app.env["SERVER_PROTOCOL"]
      refute app.env.key?("HTTP_HOST")
      assert served.raw.start_with?("HTTP/1.1 200 OK\r\n")
    end

    def test_absolute_form_target
      app = Recorder.new
      served = serve("GET http://example.org:81/p/q?r=s HTTP/1.1\r\nHost: other\r\n\r\n", app: app)

      assert_equal 200, served.status
      assert_equal ["/p/q", "r=s", "example.org:81"], app.env.values_at("PATH_INFO", "QUERY_STRING", "HTTP_HOST")
      assert_equal [["GET", "/p/q?r=s"]], served.seen
    end

    def test_options_asterisk
      app = Recorder.new
      served = serve("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", app: app)

      assert_equal 200, served.status, served.errors
      assert_equal "*", app.env["PATH_INFO"]
    end

    def test_duplicate_headers_joined
      app = Recorder.new
      serve("GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 1.1.1.1\r\nX-Forwarded-For: 2.2.2.2\r\nCookie: a=1\r\nCookie: b=2\r\n\r\n", app: app)

      assert_equal "1.1.1.1, 2.2.2.2", app.env["HTTP_X_FORWARDED_FOR"]
      assert_equal "a=1; b=2", app.env["HTTP_COOKIE"]
      assert_equal({"a" => "1", "b" => "2"}, Rack::Request.new(app.env).cookies)
    end

    def test_a_pipelined_second_request_is_not_served
      served = serve("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n")

      assert_equal [["GET", "/1"]], served.seen
      assert_equal 1, served.raw.scan("HTTP/1.1 200").size
    end

    def test_head_split_across_reads
      served = serve(["GE", "T / HT", "TP/1.1\r", "\nHost: x\r\n", "\r", "\n"])

      assert_equal 200, served.status
    end

    def test_rack_errors_is_the_configured_stream
      app = lambda do |env|
        env["rack.errors"].puts("from the app")
        [200, {}, []]
      end
      served = serve("GET / HTTP/1.1\r\nHost: x\r\n\r\n", app: app)

      assert_equal "from the app\n", served.errors
    end

    def test_over_tcp
      listener = TCPServer.new("127.0.0.1", 0)
      client = TCPSocket.new("127.0.0.1", listener.addr[1])
      accepted = listener.accept
      client.write("GET /tcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\nhi")
      app = ->(env) { [200, {"content-type" => "text/plain"}, [env["rack.input"].read, " ", env["REMOTE_ADDR"]]] }
      exchange = HTTP::Handler.new(Rack::Lint.new(app)).call(accepted, remote_addr: accepted.remote_address.ip_address, server_name: "127.0.0.1", server_port: listener.addr[1])

      response = client.read
      assert_match(/\AHTTP\/1\.1 200 OK\r\n/, response)
      assert response.end_with?("\r\n\r\nhi 127.0.0.1")
      assert_equal 200, exchange.status
      assert_equal 12, exchange.bytes_sent
      assert_operator exchange.duration, :>, 0
      assert accepted.closed?
    ensure
      client&.close
      listener&.close
    end
  end
end
