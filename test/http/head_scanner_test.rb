# frozen_string_literal: true

require "test_helper"
require "herd/http"
require_relative "../fixtures/http/malformed_requests"
require_relative "../fixtures/http/fuzzed_heads"

# The C head scanner against the Ruby parser, its reference: for any head, the
# scanner returns nil or exactly the Request the Ruby parser returns, and
# never takes a head the Ruby parser refuses.
class HeadScannerTest < Herd::Test
  include Herd::HTTPFixtures::FuzzedHeads

  SCANNER = Herd::HTTP::HeadScanner

  def setup
    skip "the C head scanner is not built (`rake compile`)" unless SCANNER.built?
    @parser = Herd::HTTP::Parser.new(max_header_count: MAX_HEADERS, scanner: nil)
  end

  # Strings compared with their encodings: the env an app gets must not
  # depend on which parser read the head.
  def shape(request)
    strings = ->(value) { value.is_a?(String) ? [value.encoding.name, value.b] : value }
    request.to_a.map { |field| field.is_a?(Hash) ? field.map { |k, v| [strings.call(k), strings.call(v)] }.sort : strings.call(field) }
  end

  # @return [Symbol] :scanned, :left (nil, the Ruby parser takes it) or :refused (nil, the Ruby parser refuses it)
  def check(head)
    scanned = SCANNER.scan(head, MAX_HEADERS)
    reference = begin
      @parser.parse_in_ruby(head)
    rescue Herd::HTTP::RequestError => e
      e
    end
    if scanned.nil?
      return reference.is_a?(Herd::HTTP::RequestError) ? :refused : :left
    end

    refute_kind_of Herd::HTTP::RequestError, reference, "the scanner took a head the Ruby parser refuses: #{head.inspect}"
    assert_equal shape(reference), shape(scanned), head.inspect
    assert_same reference.method, scanned.method, "the method String is the Ruby parser's own"
    assert_same reference.version, scanned.version
    :scanned
  end

  def test_the_common_request_is_scanned_and_equal_to_the_ruby_parsers
    heads = [
      "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
      "GET /posts/1?page=2&q=a%20b HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl/8.0\r\nAccept: */*\r\n\r\n",
      "POST /posts HTTP/1.1\r\nHost: example.com\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 0012\r\n\r\n",
      "HEAD /a?b?c HTTP/1.0\r\n\r\n",
      "DELETE /x HTTP/1.0\r\nhost: a.example:\r\n\r\n",
      "OPTIONS /x HTTP/1.1\r\nHost: a.example:00080\r\nX-Empty:\r\nX-Spaces: \t padded \t \r\n\r\n",
      "PATCH /x HTTP/1.1\r\nHost: %41.example:65535\r\nCookie: a=1; b=2\r\nX-Obs: caf\xC3\xA9\r\n\r\n"
    ]
    heads.each { |head| assert_equal :scanned, check(head.b), head }
    assert_equal :scanned, check("GET / HTTP/1.1\r\nHost: a\r\nX-#{"n" * 254}: v\r\n\r\n".b), "a name of 256 bytes, the cap"
  end

  def test_what_the_scanner_leaves_the_ruby_parser_takes_or_refuses
    left = [
      "GET / HTTP/1.1\r\nHost: a\r\nAccept: x\r\nAccept: y\r\n\r\n", # duplicates are joined in Ruby
      "GET / HTTP/1.1\r\nHost: a\r\nX_Under: 1\r\n\r\n", # dropped in Ruby
      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n",
      "GET http://a.example/x HTTP/1.1\r\nHost: b\r\n\r\n",
      "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
      "GET / HTTP/1.1\r\nHost:\r\n\r\n",
      "PROPFIND / HTTP/1.1\r\nHost: a\r\n\r\n"
    ]
    left.each { |head| assert_equal :left, check(head.b), head }
    refused = [
      "GET / HTTP/1.1\r\n\r\n", # no Host
      "GET / HTTP/1.1\r\nHost: a:65536\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
      "GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n",
      "GET / HTTP/1.1\r\nHost : a\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nX: \x01\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nX: \x7F\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1e3\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1234567890123456789\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", # one rule for both spellings
      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nX-#{"n" * 255}: v\r\n\r\n", # a name of 257 bytes: 431
      "GET / HTTP/2.0\r\nHost: a\r\n\r\n",
      "GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
      "GET /\x80 HTTP/1.1\r\nHost: a\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\n: empty name\r\n\r\n",
      "GET / HTTP/1.1\r\n#{(1..MAX_HEADERS).map { |i| "X-#{i}: v\r\n" }.join}Host: a\r\n\r\n"
    ]
    refused.each { |head| assert_equal :refused, check(head.b), head }
  end

  def test_no_request_of_the_malformed_corpus_gets_past_the_ruby_parsers_judgement
    Herd::HTTPFixtures::MalformedRequests::ALL.each do |item|
      finish = item[:request].index("\r\n\r\n") or next
      check(item[:request].byteslice(0, finish + 4))
    end
  end

  # Heads assembled from good and bad pieces, then mutated byte by byte with
  # the end of the head kept (the socket reader only hands over heads that
  # end with the empty line).
  def test_fuzzed_heads_are_scanned_exactly_as_the_ruby_parser_parses_them_or_left_to_it
    random = Random.new(Integer(ENV.fetch("HERD_FUZZ_SEED", "20261123")))
    outcomes = Hash.new(0)
    6000.times do
      head = assembled(random)
      outcomes[check(head)] += 1
      3.times { outcomes[check(mutated(head, random))] += 1 }
    end
    # Not a vacuous check: every kind of outcome came up, the scanner's most.
    assert_operator outcomes[:scanned], :>, 1000, outcomes.inspect
    assert_operator outcomes[:left], :>, 1000, outcomes.inspect
    assert_operator outcomes[:refused], :>, 1000, outcomes.inspect
  end

  def test_the_switch_and_a_missing_extension_leave_every_head_to_the_ruby_parser
    assert_nil SCANNER.unused_reason({})
    assert_equal "HERD_C_EXTENSION=0", SCANNER.unused_reason("HERD_C_EXTENSION" => "0")
    assert_match(/checked in Ruby: HERD_C_EXTENSION=off/, SCANNER.describe("HERD_C_EXTENSION" => "off"))
    SCANNER.stub(:built?, false) do
      assert_match(/not built .*`rake compile` builds it/, SCANNER.unused_reason({}))
    end
    head = "GET / HTTP/1.1\r\nHost: a\r\n\r\n".b
    ruby_only = Herd::HTTP::Parser.new(scanner: nil)
    ruby_only.stub(:parse_in_ruby, :ruby) { assert_equal :ruby, ruby_only.parse(head) }
    with_scanner = Herd::HTTP::Parser.new(scanner: SCANNER)
    with_scanner.stub(:parse_in_ruby, :ruby) { assert_kind_of Herd::HTTP::Request, with_scanner.parse(head) }
  end
end
