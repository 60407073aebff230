# frozen_string_literal: true

require "test_helper"
require "herd/http"

module Herd
  class HTTPParserTest < Test
    def parse(head)
      HTTP::Parser.new.parse(head.b)
    end

    def refusal(head, parser: HTTP::Parser.new)
      assert_raises(HTTP::RequestError) { parser.parse(head.b) }
    end

    def test_request_line_and_headers
      request = parse("GET /a/b?c=d&e HTTP/1.1\r\nHost: example.com\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nX-Custom-Header: v\r\n\r\n")

      assert_equal ["GET", "/a/b?c=d&e", "/a/b", "c=d&e", "HTTP/1.1"], [request.method, request.target, request.path, request.query, request.version]
      assert_equal({"HTTP_HOST" => "example.com", "CONTENT_TYPE" => "text/plain", "CONTENT_LENGTH" => "3", "HTTP_X_CUSTOM_HEADER" => "v"}, request.headers)
      assert_equal 3, request.content_length
      refute request.chunked
      assert request.body?
    end

    def test_request_lines_of_every_shape
      {
        "GET / HTTP/1.1" => ["GET", "/", "HTTP/1.1"],
        "DELETE /x?y HTTP/1.0" => ["DELETE", "/x?y", "HTTP/1.0"],
        "PROPFIND /dav HTTP/1.1" => ["PROPFIND", "/dav", "HTTP/1.1"], # not among the common methods
        "GETX /a HTTP/1.1" => ["GETX", "/a", "HTTP/1.1"]
      }.each do |line, expected|
        request = parse("#{line}\r\nHost: x\r\n\r\n")
        assert_equal expected, [request.method, request.target, request.version], line
      end
      ["GET HTTP/1.1", "GET  HTTP/1.1", "GET  / HTTP/1.1", "GET / HTTP/1.1 ", "GET /a b HTTP/1.1", "GET / HTTP/1.1 HTTP/1.1", " GET / HTTP/1.1", "GET\t/ HTTP/1.1"].each do |line|
        assert_equal 400, refusal("#{line}\r\nHost: x\r\n\r\n").status, line.inspect
      end
    end

    def test_strings_are_binary_as_received
      request = parse("GET /caf%C3%A9 HTTP/1.1\r\nHost: x\r\nX-Name: caf\xC3\xA9\r\n\r\n")

      assert_equal Encoding::BINARY, request.path.encoding
      assert_equal "/caf%C3%A9", request.path, "PATH_INFO is not decoded"
      assert_equal "caf\xC3\xA9".b, request.headers["HTTP_X_NAME"], "obs-text is allowed in values"
    end

    def test_whitespace_around_values_is_trimmed_and_empty_values_kept
      request = parse("GET / HTTP/1.1\r\nHost: x\r\nX-A:  \t a b \t \r\nX-B:\r\nX-C:   \r\n\r\n")

      assert_equal "a b", request.headers["HTTP_X_A"]
      assert_equal "", request.headers["HTTP_X_B"]
      assert_equal "", request.headers["HTTP_X_C"]
    end

    def test_duplicate_headers_are_joined_and_cookies_with_semicolons
      request = parse("GET / HTTP/1.1\r\nHost: x\r\nAccept: a\r\naccept: b\r\nCookie: a=1\r\nCOOKIE: b=2\r\n\r\n")

      assert_equal "a, b", request.headers["HTTP_ACCEPT"]
      assert_equal "a=1; b=2", request.headers["HTTP_COOKIE"]
    end

    # RFC 9110 §8.6 lets a recipient accept identical values, on two lines or
    # as a list on one; herd refuses both, one rule for either spelling.
    def test_identical_content_lengths_are_refused_on_two_lines_and_in_a_list
      [
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5,5\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: x\r\ncontent-length: 5\r\nContent-Length: 5\r\n\r\n"
      ].each do |head|
        assert_equal 400, refusal(head).status, head.inspect
        assert_equal 400, refusal(head, parser: HTTP::Parser.new(scanner: nil)).status, head.inspect
      end
      assert_equal 5, parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n").content_length
    end

    def test_header_names_with_underscores_are_dropped
      request = parse("GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 10.0.0.1\r\nX_Forwarded_For: 6.6.6.6\r\n\r\n")

      assert_equal "10.0.0.1", request.headers["HTTP_X_FORWARDED_FOR"]
    end

    def test_chunked_is_case_insensitive
      request = parse("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:  Chunked \r\n\r\n")

      assert request.chunked
      assert request.body?
    end

    def test_absolute_form_replaces_the_host
      request = parse("GET http://Example.com:8080?x=1 HTTP/1.1\r\nHost: ignored.example\r\n\r\n")

      assert_equal ["/?x=1", "/", "x=1"], [request.target, request.path, request.query]
      assert_equal "Example.com:8080", request.headers["HTTP_HOST"]
      refute_includes request.headers.values, "ignored.example"
      assert_equal "/a/b", parse("GET HTTPS://example.com/a/b HTTP/1.1\r\nHost: x\r\n\r\n").path
    end

    def test_absolute_form_in_http11_needs_a_valid_host_all_the_same
      assert_match(/no Host header/, refusal("GET http://example.com/ HTTP/1.1\r\n\r\n").message)
      assert_match(/no Host header/, refusal("GET https://example.com:8443/a?b HTTP/1.1\r\n\r\n").message)
      assert_match(/invalid Host header/, refusal("GET http://example.com/ HTTP/1.1\r\nHost: a/b\r\n\r\n").message)
      assert_match(/invalid Host header/, refusal("GET http://example.com/ HTTP/1.1\r\nHost: a:99999\r\n\r\n").message)
      assert_match(/more than one Host/, refusal("GET http://example.com/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n").message)
    end

    def test_absolute_form_in_http10_needs_no_host
      request = parse("GET http://example.com:8080/a HTTP/1.0\r\n\r\n")

      assert_equal "example.com:8080", request.headers["HTTP_HOST"]
      assert_equal "/a", request.path
      assert_match(/invalid Host header/, refusal("GET http://example.com/ HTTP/1.0\r\nHost: a/b\r\n\r\n").message)
    end

    def test_ports_from_0_to_65535_are_valid
      ["0", "1", "80", "080", "0000080", "8080", "59999", "60000", "64999", "65499", "65529", "65535", "0065535", ""].each do |port|
        assert_equal "a:#{port}", parse("GET / HTTP/1.1\r\nHost: a:#{port}\r\n\r\n").headers["HTTP_HOST"], port
        assert_equal "a:#{port}", parse("GET http://a:#{port}/ HTTP/1.1\r\nHost: x\r\n\r\n").headers["HTTP_HOST"], port
      end
      assert_equal "[::1]:65535", parse("GET http://[::1]:65535/ HTTP/1.1\r\nHost: x\r\n\r\n").headers["HTTP_HOST"]
    end

    def test_ports_above_65535_and_malformed_authorities_are_refused
      authorities = ["a:65536", "a:65540", "a:65600", "a:66000", "a:70000", "a:99999", "a:100000", "a:0065536",
        "a:#{"9" * 40}", "[::1]:65536", ":80", ":", "a:8o", "a:-1", "a:+80", "a:1:2", "u@a", "@a", "u:p@a:80", "[::1", "[]"]
      authorities.each do |authority|
        assert_match(/invalid Host header/, refusal("GET / HTTP/1.1\r\nHost: #{authority}\r\n\r\n").message, authority)
        assert_match(/invalid authority in the request target/, refusal("GET http://#{authority}/ HTTP/1.1\r\nHost: x\r\n\r\n").message, authority)
      end
      assert_match(/invalid authority/, refusal("GET http:///a HTTP/1.1\r\nHost: x\r\n\r\n").message)
    end

    def test_an_empty_host_header_is_valid_but_an_empty_authority_is_not
      assert_equal "", parse("GET / HTTP/1.1\r\nHost:\r\n\r\n").headers["HTTP_HOST"]
      assert_match(/invalid authority/, refusal("GET http:// HTTP/1.1\r\nHost: x\r\n\r\n").message)
    end

    def test_asterisk_form_for_options
      request = parse("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")

      assert_equal ["*", ""], [request.path, request.query]
    end

    def test_http10_needs_no_host
      request = parse("GET / HTTP/1.0\r\n\r\n")

      assert_equal "HTTP/1.0", request.version
      refute request.http11?
    end

    def test_expect_continue
      assert parse("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n").expect_continue
      refute parse("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n").expect_continue
    end

    def test_ipv6_host
      assert_equal "[::1]:8080", parse("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n").headers["HTTP_HOST"]
    end

    def test_refusals_carry_a_status_and_a_reason
      error = refusal("GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n b\r\n\r\n")

      assert_equal 400, error.status
      assert_match(/obs-fold/, error.message)
      assert_match(/whitespace before the colon/, refusal("GET / HTTP/1.1\r\nHost : x\r\n\r\n").message)
      assert_match(/control character/, refusal("GET / HTTP/1.1\r\nHost: x\x00\r\n\r\n").message)
      assert_match(/bare CR or LF/, refusal("GET / HTTP/1.1\r\nHost: x\ny\r\n\r\n").message)
      assert_equal 505, refusal("GET / HTTP/3.0\r\nHost: x\r\n\r\n").status
    end

    def test_header_count_limit
      head = "GET / HTTP/1.1\r\nHost: x\r\n#{(1..4).map { |i| "X-#{i}: y\r\n" }.join}\r\n"

      assert_equal 5, HTTP::Parser.new(max_header_count: 5).parse(head.b).headers.size
      assert_equal 431, refusal(head, parser: HTTP::Parser.new(max_header_count: 4)).status
    end

    # Puma and Unicorn cap a name at 256 bytes; herd too, with 431 (trailers as headers).
    def test_header_names_up_to_256_bytes_and_431_above
      name = "X-#{"n" * 254}"
      [HTTP::Parser.new, HTTP::Parser.new(scanner: nil)].each do |parser|
        assert_equal "v", parser.parse("GET / HTTP/1.1\r\nHost: x\r\n#{name}: v\r\n\r\n".b).headers["HTTP_#{name.upcase.tr("-", "_")}"]
        assert_equal 431, refusal("GET / HTTP/1.1\r\nHost: x\r\n#{name}N: v\r\n\r\n", parser: parser).status
        assert_equal 431, refusal("GET / HTTP/1.1\r\nHost: x\r\n#{"N" * 2048}: v\r\n\r\n", parser: parser).status
        assert_equal 400, refusal("GET / HTTP/1.1\r\nHost: x\r\n#{name} N: v\r\n\r\n", parser: parser).status, "not a token: 400 first"
        assert_equal 1, parser.parse_trailers("#{name}: v\r\n\r\n".b).size
        assert_equal 431, assert_raises(HTTP::RequestError) { parser.parse_trailers("#{name}N: v\r\n\r\n".b) }.status
      end
    end

    def test_env_keys
      assert_equal "HTTP_X_A_B", HTTP::Parser.env_key("x-a-B")
      assert_equal "CONTENT_TYPE", HTTP::Parser.env_key("content-type")
      assert_nil HTTP::Parser.env_key("x_a")
    end

    def test_the_cache_of_header_names_is_bounded
      parser = HTTP::Parser.new
      head = "GET / HTTP/1.1\r\nHost: x\r\n#{(1..90).map { |i| "X-Unique-#{i}: y\r\n" }.join}\r\n".b
      20.times { |round| parser.parse(head.gsub("X-Unique-", "X-U#{round}-")) }

      assert_operator parser.instance_variable_get(:@env_keys).size, :<=, HTTP::Parser::CACHE_LIMIT
    end

    def test_trailer_sections_parse_like_headers
      assert_equal({"HTTP_X_CHECKSUM" => "abc", "HTTP_X_MORE" => "1"}, HTTP::Parser.new.parse_trailers("X-Checksum: abc\r\nX-More: 1\r\n\r\n".b))
    end
  end
end
