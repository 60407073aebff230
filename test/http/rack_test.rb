# frozen_string_literal: true

require "test_helper"
require_relative "../fixtures/http/socket_driver"

module Herd
  # Hijacking, streaming bodies, rack.response_finished and early hints.
  class HTTPRackTest < Test
    include HTTPDriver

    GET = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"

    def test_full_hijack
      app = lambda do |env|
        io = env["rack.hijack"].call
        io.write("raw bytes, no HTTP")
        io.close
        [200, {}, []]
      end
      served = serve(GET, app: app)

      assert_equal "raw bytes, no HTTP", served.raw
      assert served.exchange.hijacked
      assert_nil served.exchange.status
      assert_equal 0, served.exchange.bytes_sent
      assert_nil served.exchange.error
    end

    def test_full_hijack_leaves_the_socket_open
      kept = nil
      app = lambda do |env|
        kept = env["rack.hijack"].call
        [-1, {}, []] # the old convention; ignored
      end
      client, server = UNIXSocket.pair
      client.write(GET)
      exchange = HTTP::Handler.new(app).call(server, remote_addr: "127.0.0.1", server_name: "localhost", server_port: 80)

      assert exchange.hijacked
      assert_same server, kept
      refute server.closed?
      kept.write("still mine")
      kept.close
      assert_equal "still mine", client.read
    ensure
      client&.close
    end

    def test_partial_hijack
      app = lambda do |_env|
        upgrade = lambda do |stream|
          stream.write("after the head")
          stream.close
        end
        [101, {"connection" => "upgrade", "upgrade" => "websocket", "rack.hijack" => upgrade}, []]
      end
      served = serve("GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", app: app)

      assert_equal "HTTP/1.1 101 Switching Protocols", served.status_lines.first
      assert_equal "upgrade", served.header("connection")
      assert_equal "websocket", served.header("upgrade")
      refute served.headers.key?("rack.hijack")
      assert_equal "after the head", served.raw_body
      assert served.exchange.hijacked
      assert_equal 101, served.exchange.status
      assert_nil served.exchange.error
    end

    def test_partial_hijack_that_raises_is_closed_by_herd
      app = ->(_env) { [200, {"rack.hijack" => ->(_stream) { raise "hijack failed" }}, []] }
      served = serve(GET, app: app)

      assert_equal 200, served.status
      refute served.exchange.hijacked
      assert_equal "hijack failed", served.exchange.error.message
    end

    def test_streaming_body_is_chunked_for_http11
      body = lambda do |stream|
        stream.write("hello")
        stream << " " << "world"
        stream.flush
        stream.close
      end
      served = serve(GET, app: ->(_env) { [200, {"content-type" => "text/plain"}, body] })

      assert_equal "chunked", served.header("transfer-encoding")
      assert_equal "hello world", served.body
      assert_equal 11, served.exchange.bytes_sent
      assert_nil served.exchange.error
    end

    def test_streaming_body_that_returns_without_closing
      served = serve(GET, app: ->(_env) { [200, {}, ->(stream) { stream.write("x") }] })

      assert_equal "1\r\nx\r\n0\r\n\r\n", served.raw_body
    end

    def test_streaming_body_for_http10_is_close_delimited
      served = serve("GET / HTTP/1.0\r\n\r\n", app: ->(_env) { [200, {}, ->(stream) { stream.write("plain") }] })

      refute served.headers.key?("transfer-encoding")
      assert_equal "plain", served.raw_body
    end

    def test_streaming_body_with_content_length_is_sent_as_is
      served = serve(GET, app: ->(_env) { [200, {"content-length" => "3"}, ->(stream) { stream.write("abc") }] })

      assert_equal "abc", served.raw_body
    end

    def test_streaming_body_that_raises_is_cut_short
      body = lambda do |stream|
        stream.write("part")
        raise "stream broke"
      end
      served = serve(GET, app: ->(_env) { [200, {}, body] })

      assert_equal "4\r\npart\r\n", served.raw_body
      assert_equal "stream broke", served.exchange.error.message
    end

    def test_response_finished_callbacks_run_after_the_response_in_reverse_order
      calls = []
      headers = {"content-type" => "text/plain"}
      app = lambda do |env|
        env["rack.response_finished"] << ->(*args) { calls << [:first, *args] }
        env["rack.response_finished"] << ->(*args) { calls << [:second, *args] }
        [200, headers, ["ok"]]
      end
      served = serve(GET, app: app)

      assert_equal [:second, :first], calls.map(&:first)
      _, env, status, sent_headers, error = calls.first
      assert_equal "GET", env["REQUEST_METHOD"]
      assert_equal 200, status
      assert_equal headers, sent_headers
      assert_nil error
      assert_equal 200, served.status
    end

    def test_response_finished_gets_the_application_error
      calls = []
      app = lambda do |env|
        env["rack.response_finished"] << ->(*args) { calls << args }
        raise "app failed"
      end
      served = serve(GET, app: app)

      assert_equal 500, served.status
      _, status, headers, error = calls.first
      assert_nil status
      assert_nil headers
      assert_equal "app failed", error.message
    end

    def test_response_finished_gets_the_client_error
      calls = []
      app = lambda do |env|
        env["rack.response_finished"] << ->(*args) { calls << args }
        [200, {}, Enumerator.new { |y| 64.times { y << "x" * 65_536 } }]
      end
      client, server = UNIXSocket.pair
      client.write(GET)
      client.close
      HTTP::Handler.new(app, HTTP::Options.new(logger: StringIO.new)).call(server, remote_addr: "127.0.0.1", server_name: "localhost", server_port: 80)

      assert_kind_of HTTP::ClientDisconnected, calls.first.last
    end

    def test_a_raising_response_finished_callback_is_logged_and_the_others_still_run
      calls = []
      app = lambda do |env|
        env["rack.response_finished"] << ->(*) { calls << :ran }
        env["rack.response_finished"] << ->(*) { raise "callback failed" }
        [200, {}, []]
      end
      served = serve(GET, app: app)

      assert_equal [:ran], calls
      assert_match(/rack.response_finished callback raised/, served.log)
    end

    def test_early_hints
      app = lambda do |env|
        env["rack.early_hints"].call({"link" => ["</style.css>; rel=preload; as=style", "</app.js>; rel=preload; as=script"]})
        [200, {"content-type" => "text/html"}, ["<html>"]]
      end
      served = serve(GET, app: app, options: {early_hints: true})

      assert_equal ["HTTP/1.1 103 Early Hints", "HTTP/1.1 200 OK"], served.status_lines
      assert_includes served.raw, "HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload; as=style\r\nlink: </app.js>; rel=preload; as=script\r\n\r\nHTTP/1.1 200 OK\r\n"
      assert_equal 200, served.status
      assert_equal "<html>", served.raw_body
    end

    def test_early_hints_are_not_offered_to_http10_clients
      seen = nil
      served = serve("GET / HTTP/1.0\r\n\r\n", app: ->(env) { (seen = env.key?("rack.early_hints")) || [200, {}, []] }, options: {early_hints: true})

      assert_equal 200, served.status
      refute seen
    end

    def test_invalid_early_hints_raise_into_the_application
      app = ->(env) { env["rack.early_hints"].call({"link" => "a\r\nb"}) }
      served = serve(GET, app: app, options: {early_hints: true}, lint: false)

      assert_equal 500, served.status
      assert_kind_of HTTP::InvalidResponse, served.exchange.error
      assert_equal ["HTTP/1.1 500 Internal Server Error"], served.status_lines
    end

    def test_rack_lint_sees_a_valid_env_for_every_feature
      app = lambda do |env|
        env["rack.early_hints"].call({"link" => "</a.css>; rel=preload"})
        [200, {"content-type" => "text/plain"}, [env["rack.hijack?"].to_s]]
      end
      served = serve("POST /x?y=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", app: app, options: {early_hints: true})

      assert_nil served.exchange.error, served.errors
      assert_equal "true", served.raw_body
    end
  end
end
