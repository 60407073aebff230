# frozen_string_literal: true

require "test_helper"
require "socket"
require "herd/http"
require_relative "../fixtures/http/malformed_requests"
require_relative "../fixtures/http/fuzzed_heads"

# HeadScanner.receive, a worker's first read of a connection parsed into the
# Rack env in C, against the Ruby path it stands in for (SocketReader, the
# Ruby parser, EnvBuilder#build): the same env for every head it takes, and
# for every other the very bytes it read, so that the Ruby path decides.
class HeadScannerReceiveTest < Herd::Test
  include Herd::HTTPFixtures::FuzzedHeads

  SCANNER = Herd::HTTP::HeadScanner
  LINE = 8192
  FIELD_BYTES = 65_536
  CONNECTION = Herd::HTTP::Connection.new("10.0.0.7", "127.0.0.1", "8080", "http").freeze

  def setup
    skip "the C head scanner is not built (`rake compile`)" unless SCANNER.built? && SCANNER.respond_to?(:receive)
    @parser = Herd::HTTP::Parser.new(max_header_count: MAX_HEADERS, scanner: nil)
    @builder = Herd::HTTP::EnvBuilder.new(Herd::HTTP::Options.new)
    @template = @builder.template(CONNECTION.server_name, CONNECTION.server_port, CONNECTION.url_scheme)
    @sockets = []
  end

  def teardown
    @sockets.each(&:close)
  end

  # @return [Array(UNIXSocket, UNIXSocket)] client end, server end
  def connection
    UNIXSocket.pair.tap { |pair| @sockets.concat(pair) }
  end

  def receive(bytes, line: LINE, field_bytes: FIELD_BYTES)
    client, server = connection
    client.write(bytes) unless bytes.empty?
    SCANNER.receive(server, @template, line, field_bytes, MAX_HEADERS)
  end

  # The env as the Ruby path makes it, and as a Transaction completes it.
  def ruby_env(head)
    request = @parser.parse_in_ruby(head)
    env = @builder.build(request, Herd::HTTP::EmptyInput::INSTANCE, 0, nil, CONNECTION)
    env["rack.hijack"] = :transaction
    [request, env]
  end

  def c_env(request)
    env = @builder.complete(request, Herd::HTTP::EmptyInput::INSTANCE, CONNECTION)
    env["rack.hijack"] = :transaction
    env
  end

  # Keys and values with their encodings: an app must not see which path read the head.
  def shape(hash)
    strings = ->(value) { value.is_a?(String) ? [value.encoding.name, value.frozen?, value.b] : value }
    hash.map { |key, value| [strings.call(key), strings.call(value)] }.sort_by { |key, _| key.last }
  end

  # @return [Symbol] :parsed (a Request equal to the Ruby path's) or :handed_over (the bytes)
  def check(head)
    received = receive(head)
    if received.is_a?(String)
      assert_equal head, received, "the bytes read are handed over as they came"
      assert_equal Encoding::BINARY, received.encoding
      refute received.frozen?, "the SocketReader's buffer from now on"
      return :handed_over
    end

    assert_kind_of Herd::HTTP::Request, received, head.inspect
    reference, env = ruby_env(head) # raises if the Ruby parser refuses what C took
    assert_equal shape(env), shape(c_env(received)), head.inspect
    assert_equal reference.to_a[0..4] + reference.to_a[6..], received.to_a[0..4] + received.to_a[6..], head.inspect
    :parsed
  end

  def test_the_common_request_becomes_the_same_env_as_the_ruby_paths
    [
      "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
      "GET /posts/1?page=2&q=a%20b HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl/8.0\r\nAccept: */*\r\n\r\n",
      "POST /posts HTTP/1.1\r\nHost: example.com\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 0012\r\n\r\n",
      "HEAD /a?b?c HTTP/1.0\r\n\r\n",
      "PATCH /x HTTP/1.1\r\nHost: %41.example:65535\r\nCookie: a=1; b=2\r\nX-Obs: caf\xC3\xA9\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\n#{(1..MAX_HEADERS - 1).map { |i| "X-Field-#{i}: #{"v" * i}\r\n" }.join}\r\n"
    ].each { |head| assert_equal :parsed, check(head.b), head }
  end

  def test_a_head_with_anything_after_it_is_handed_over
    [
      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc", # its body came with it
      "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", # pipelined
      "GET / HTTP/1.1\r\nHost: a\r\n\r\n\r\n", # a stray CRLF
      "GET / HTTP/1.1\r\nHost: a\r\n", # not all there yet
      "G"
    ].each { |bytes| assert_equal :handed_over, check(bytes.b), bytes }
  end

  def test_what_the_scanner_leaves_or_the_ruby_parser_refuses_is_handed_over
    [
      "GET / HTTP/1.1\r\nHost: a\r\nAccept: x\r\nAccept: y\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
      "GET http://a.example/x HTTP/1.1\r\nHost: b\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
      "GET / HTTP/1.1\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n",
      "GET / HTTP/1.1\r\n#{(1..MAX_HEADERS).map { |i| "X-#{i}: v\r\n" }.join}Host: a\r\n\r\n"
    ].each { |head| assert_equal :handed_over, check(head.b), head }
    Herd::HTTPFixtures::MalformedRequests::ALL.each do |item|
      options = Herd::HTTP::Options.new(**item[:options])
      client, server = connection
      client.write(item[:request])
      received = SCANNER.receive(server, @template, options.max_request_line, options.max_header_bytes, options.max_header_count)
      refute_kind_of Herd::HTTP::Request, received, item[:name]
    end
  end

  def test_heads_over_the_size_limits_are_handed_over_for_the_ruby_paths_414_and_431
    head = "GET /#{"a" * 100} HTTP/1.1\r\nHost: a\r\nX-Big: #{"b" * 200}\r\n\r\n".b
    line_end = head.index("\r\n")
    fields = head.bytesize - line_end - 4
    assert_kind_of Herd::HTTP::Request, receive(head, line: line_end, field_bytes: fields), "at the limits"
    assert_equal head, receive(head, line: line_end - 1), "request line one byte over"
    assert_equal head, receive(head, field_bytes: fields - 1), "header section one byte over"
  end

  def test_a_read_that_may_have_left_bytes_behind_is_handed_over
    head = "GET / HTTP/1.1\r\nHost: a\r\nX-Pad: #{"p" * (16 * 1024 - 36)}\r\n\r\n".b
    assert_equal 16 * 1024, head.bytesize
    assert_equal head, receive(head, field_bytes: 1 << 20)
  end

  def test_nothing_read_is_nil_and_leaves_the_socket_to_the_ruby_reader
    client, server = connection
    assert_nil SCANNER.receive(server, @template, LINE, FIELD_BYTES, MAX_HEADERS), "no bytes yet: never waits"
    client.close
    assert_nil SCANNER.receive(server, @template, LINE, FIELD_BYTES, MAX_HEADERS), "end of file"
    server.close
    assert_raises(IOError) { SCANNER.receive(server, @template, LINE, FIELD_BYTES, MAX_HEADERS) }
  end

  def test_each_env_is_a_copy_of_its_own_and_the_template_stays_as_it_was
    template = @template.dup
    first = receive("GET /a HTTP/1.1\r\nHost: a\r\nX-One: 1\r\n\r\n".b)
    second = receive("GET /b HTTP/1.1\r\nHost: b\r\n\r\n".b)
    refute_same first.headers, second.headers
    assert_equal "1", first.headers["HTTP_X_ONE"]
    refute second.headers.key?("HTTP_X_ONE")
    assert_predicate @template, :frozen?
    assert_equal template, @template
    refute_predicate first.headers, :frozen?
  end

  # Every env of a worker's life shares the template's values: an
  # application appending to one must not change the next request's.
  def test_the_templates_strings_are_frozen
    strings = @template.values.grep(String)
    assert_includes strings, "herd/#{Herd::VERSION}"
    assert strings.all?(&:frozen?), strings.reject(&:frozen?).inspect
  end

  def test_called_before_the_parser_set_it_up_the_scanner_raises_instead_of_crashing
    code = <<~RUBY
      require "socket"
      require "herd/\#{RbConfig::CONFIG["ruby_version"]}/native"
      a, b = UNIXSocket.pair
      a.write("GET / HTTP/1.1\\r\\nHost: a\\r\\n\\r\\n")
      [-> { Herd::HTTP::HeadScanner.receive(b, {}, 8192, 65536, 100) }, -> { Herd::HTTP::HeadScanner.scan("GET / HTTP/1.1\\r\\nHost: a\\r\\n\\r\\n", 100) }].each do |call|
        call.call
      rescue RuntimeError => e
        puts e.message
      end
    RUBY
    out, err, status = ruby_run(code)
    assert status.success?, err
    assert_equal ["Herd::HTTP::HeadScanner.setup first (herd/http/parser does)"] * 2, out.lines.map(&:chomp)
  end

  def test_the_template_holds_every_key_an_env_gets_and_nothing_else
    _, env = ruby_env("GET / HTTP/1.1\r\nHost: a\r\n\r\n".b)
    assert_equal (env.keys - ["HTTP_HOST"]).sort, @template.keys.sort
    assert_equal [nil], Herd::HTTP::EnvBuilder::PER_REQUEST.map { |key| @template[key] }.uniq
  end

  def test_fuzzed_heads_are_parsed_exactly_as_the_ruby_path_parses_them_or_handed_over
    random = Random.new(Integer(ENV.fetch("HERD_FUZZ_SEED", "20261126")))
    outcomes = Hash.new(0)
    1500.times do
      head = assembled(random)
      outcomes[check(head)] += 1
      outcomes[check(mutated(head, random))] += 1
    end
    assert_operator outcomes[:parsed], :>, 150, outcomes.inspect
    assert_operator outcomes[:handed_over], :>, 300, outcomes.inspect
  end
end
