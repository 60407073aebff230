# frozen_string_literal: true

require "test_helper"
require "tempfile"
require "tmpdir"
require "fileutils"
require_relative "../fixtures/http/socket_driver"

module Herd
  # What herd writes for the application's response: framing, headers, refusals.
  class HTTPResponseTest < Test
    include HTTPDriver

    GET = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    HEAD = "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n"
    GET10 = "GET / HTTP/1.0\r\n\r\n"

    # A body that records #close and can only be iterated.
    class Body
      attr_reader :closed, :iterated

      def initialize(*parts, raise_after: nil)
        @parts = parts
        @raise_after = raise_after
      end

      def each
        @iterated = true
        @parts.each_with_index do |part, index|
          raise "boom in each" if @raise_after == index

          yield part
        end
      end

      def close
        @closed = true
      end
    end

    def app(status = 200, headers = {"content-type" => "text/plain"}, body = ["hello"])
      ->(_env) { [status, headers, body] }
    end

    def test_array_body_gets_content_length_date_and_connection_close
      served = serve(GET, app: app(200, {"content-type" => "text/plain"}, ["hello", " ", "world"]))

      assert_equal "HTTP/1.1 200 OK", served.status_lines.first
      assert_equal "11", served.header("content-length")
      assert_equal "close", served.header("connection")
      assert_match(/\A\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT\z/, served.header("date"))
      assert_equal "hello world", served.raw_body
      assert_equal 11, served.exchange.bytes_sent
      assert_nil served.exchange.error
    end

    def test_application_date_and_connection
      served = serve(GET, app: app(200, {"date" => "Tue, 01 Jan 2030 00:00:00 GMT", "connection" => "keep-alive", "keep-alive" => "timeout=5"}, []))

      assert_equal ["Tue, 01 Jan 2030 00:00:00 GMT"], served.headers["date"]
      assert_equal ["close"], served.headers["connection"]
      refute served.headers.key?("keep-alive")
    end

    def test_framing_and_connection_headers_are_recognized_in_any_case
      served = serve(GET, app: app(200, {"Content-Length" => "5", "DATE" => "Tue, 01 Jan 2030 00:00:00 GMT", "Connection" => "keep-alive", "Keep-Alive" => "timeout=5"}, ["hello"]), lint: false)

      assert_equal ["5"], served.headers["content-length"]
      assert_equal ["Tue, 01 Jan 2030 00:00:00 GMT"], served.headers["date"]
      assert_equal ["close"], served.headers["connection"]
      refute served.headers.key?("keep-alive")
      assert_equal "hello", served.raw_body
      assert_match(/500/, serve(GET, app: app(200, {"Content-Length" => "5", "Transfer-Encoding" => "chunked"}, ["hello"]), lint: false).status_lines.first)
    end

    def test_body_parts_of_different_encodings_go_out_byte_for_byte
      parts = ["caf\u00e9 ", "\xFF\xFE".b, "na\u00efve"]
      served = serve(GET, app: app(200, {"content-type" => "application/octet-stream"}, parts))

      assert_equal parts.map(&:b).join, served.raw_body.b
      assert_equal parts.sum(&:bytesize).to_s, served.header("content-length")
      assert_nil served.exchange.error
    end

    def test_multiple_values_become_multiple_lines
      served = serve(GET, app: app(200, {"set-cookie" => ["a=1", "b=2"]}, []))

      assert_equal ["a=1", "b=2"], served.headers["set-cookie"]
    end

    def test_unknown_length_is_chunked_for_http11
      body = Body.new("hello", "", " world")
      served = serve(GET, app: app(200, {}, body))

      assert_equal "chunked", served.header("transfer-encoding")
      refute served.headers.key?("content-length")
      assert_equal "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", served.raw_body, "empty parts are skipped: an empty chunk would end the body"
      assert_equal "hello world", served.body
      assert_equal 11, served.exchange.bytes_sent
      assert body.closed
    end

    def test_unknown_length_is_close_delimited_for_http10
      served = serve(GET10, app: app(200, {}, Body.new("hello", " world")))

      refute served.headers.key?("transfer-encoding")
      refute served.headers.key?("content-length")
      assert_equal "hello world", served.raw_body
    end

    def test_application_content_length_is_kept_and_the_body_sent_as_is
      served = serve(GET, app: app(200, {"content-length" => "5"}, Body.new("he", "llo")))

      assert_equal ["5"], served.headers["content-length"]
      assert_equal "hello", served.raw_body
    end

    def test_head_has_no_body_and_the_body_is_not_iterated_but_closed
      body = Body.new("hello")
      served = serve(HEAD, app: app(200, {"content-length" => "5"}, body), lint: false)

      assert_equal "5", served.header("content-length")
      assert_equal "", served.raw_body
      refute body.iterated
      assert body.closed
    end

    def test_head_with_lint
      served = serve(HEAD, app: app(200, {"content-type" => "text/plain"}, []))

      assert_equal 200, served.status
      assert_equal "", served.raw_body
    end

    def test_204_and_304_have_no_body_and_no_added_framing
      [204, 304].each do |status|
        body = Body.new
        served = serve(GET, app: app(status, {}, body))

        assert_equal status, served.status
        assert_equal "", served.raw_body
        refute served.headers.key?("content-length")
        refute served.headers.key?("transfer-encoding")
        assert body.closed
      end
    end

    def test_file_body_is_sent_with_its_size
      file = Tempfile.create("herd-response")
      file.write("from a file")
      file.close
      body = Rack::Files.new(File.dirname(file.path)).call(Rack::MockRequest.env_for("/#{File.basename(file.path)}"))[2]
      served = serve(GET, app: app(200, {}, body))

      assert_equal "11", served.header("content-length")
      assert_equal "from a file", served.raw_body
      assert_equal 11, served.exchange.bytes_sent
    ensure
      File.unlink(file.path) if file
    end

    def test_a_file_body_with_rack_files
      dir = Dir.mktmpdir
      File.write(File.join(dir, "a.txt"), "abcdef")
      served = serve("GET /a.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=1-3\r\n\r\n", app: Rack::Files.new(dir))

      assert_equal 206, served.status
      assert_equal "bcd", served.raw_body
      assert_equal "3", served.header("content-length")
    ensure
      FileUtils.rm_rf(dir) if dir
    end

    def test_crlf_in_a_header_value_gives_500_and_the_response_is_discarded
      ["a\r\nset-cookie: evil=1", "a\nb", "a\rb", "a\x00b"].each do |value|
        body = Body.new("secret")
        served = serve(GET, app: app(200, {"x-injected" => value}, body), lint: false)

        assert_equal 500, served.status, value.inspect
        assert_equal "Internal Server Error\n", served.raw_body
        refute_includes served.raw, "evil"
        refute served.headers.key?("x-injected")
        assert_kind_of HTTP::InvalidResponse, served.exchange.error
        assert_equal 500, served.exchange.status
        assert_match(/invalid response to GET \/: header x-injected has a control character/, served.log)
        assert body.closed, "the discarded body is closed"
      end
    end

    def test_invalid_header_name_gives_500
      ["x injected", "x:y", "", "a\r\nb"].each do |name|
        served = serve(GET, app: app(200, {name => "v"}, []), lint: false)

        assert_equal 500, served.status, name.inspect
      end
      assert_equal 500, serve(GET, app: app(200, {x: "v"}, []), lint: false).status
    end

    def test_invalid_status_gives_500
      ["200", 99, 1000, nil].each do |status|
        assert_equal 500, serve(GET, app: app(status, {}, []), lint: false).status, status.inspect
      end
    end

    def test_invalid_content_length_gives_500
      assert_equal 500, serve(GET, app: app(200, {"content-length" => "5x"}, ["hello"]), lint: false).status
      assert_equal 500, serve(GET, app: app(200, {"content-length" => "5", "transfer-encoding" => "chunked"}, ["hello"]), lint: false).status
    end

    def test_non_string_body_part_gives_500
      assert_equal 500, serve(GET, app: app(200, {}, ["a", :b]), lint: false).status
    end

    def test_rack2_newline_separated_values_are_split_only_when_asked
      assert_equal "set-cookie: a=1\r\nset-cookie: b=2\r\n", HTTP::ResponseHeaders.new({"set-cookie" => "a=1\nb=2"}, split_newlines: true).lines
      assert_raises(HTTP::InvalidResponse) { HTTP::ResponseHeaders.new({"set-cookie" => "a=1\nb=2"}, split_newlines: false) }
      assert_raises(HTTP::InvalidResponse) { HTTP::ResponseHeaders.new({"x" => "a\r\nb"}, split_newlines: true) }
    end

    def test_application_exception_gives_500_logged_with_backtrace
      failing = ->(_env) { raise ArgumentError, "bad things" }
      served = serve("GET /fail HTTP/1.1\r\nHost: x\r\n\r\n", app: failing)

      assert_equal 500, served.status
      assert_equal "Internal Server Error\n", served.raw_body
      assert_kind_of ArgumentError, served.exchange.error
      assert_equal 500, served.exchange.status
      assert_equal "Internal Server Error\n".bytesize, served.exchange.bytes_sent
      assert_match(%r{herd: application error in GET /fail: ArgumentError: bad things}, served.log)
      assert_match(/ArgumentError: bad things\n\t.*response_test\.rb/, served.errors)
    end

    def test_script_errors_are_application_errors_too
      assert_equal 500, serve(GET, app: ->(_env) { raise NotImplementedError, "todo" }).status
    end

    def test_exception_while_iterating_cuts_the_response_short
      body = Body.new("first", "second", raise_after: 1)
      served = serve(GET, app: app(200, {}, body))

      assert_equal 200, served.status
      assert_equal "5\r\nfirst\r\n", served.raw_body, "no last chunk: the client sees an incomplete response"
      assert_equal "boom in each", served.exchange.error.message
      assert_match(/application error while sending GET \/: RuntimeError: boom in each/, served.log)
      assert body.closed
    end

    def test_body_close_raising_is_logged
      body = Body.new("x")
      def body.close = raise("close failed")
      served = serve(GET, app: app(200, {}, body))

      assert_equal "1\r\nx\r\n0\r\n\r\n", served.raw_body
      assert_equal "close failed", served.exchange.error.message
      assert_match(/body.close raised/, served.log)
    end

    def test_client_gone_while_writing
      client, server = UNIXSocket.pair
      client.write(GET)
      client.close
      big = Body.new(Array.new(64) { "x" * 65_536 })
      log = StringIO.new
      exchange = HTTP::Handler.new(app(200, {}, big), HTTP::Options.new(logger: log)).call(server, remote_addr: "127.0.0.1", server_name: "localhost", server_port: 80)

      assert_kind_of HTTP::ClientDisconnected, exchange.error
      assert_equal 200, exchange.status
      assert big.closed
      assert server.closed?
      assert_match(/went away/, log.string)
    end

    def test_lint_checks_the_whole_response
      lint_app = lambda do |_env|
        [201, {"content-type" => "text/plain", "content-length" => "2", "x-list" => ["a", "b"]}, ["ok"]]
      end
      served = serve(GET, app: lint_app)

      assert_nil served.exchange.error
      assert_equal 201, served.status
      assert_equal ["a", "b"], served.headers["x-list"]
    end
  end
end
