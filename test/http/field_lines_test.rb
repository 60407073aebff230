# frozen_string_literal: true

require "test_helper"
require "open3"
require "stringio"
require "rack/headers"
require "herd/http"

# The C response headers (FieldLines) against ResponseHeaders in Ruby, their
# reference: for any headers, the C code sets nothing or exactly what the
# Ruby code sets, and never takes headers the Ruby code refuses.
class FieldLinesTest < Herd::Test
  FIELD_LINES = Herd::HTTP::ResponseHeaders::FAST_PATH

  NAMES = [
    ["content-type", "content-length", "Content-Length", "date", "Date", "transfer-encoding", "cache-control",
      "set-cookie", "x-request-id", "etag", "vary", "x-a_b", "x~!#$%&'*+-.^_`|"],
    ["connection", "Keep-Alive", "rack.hijack", "rack.x", "bad name", "", "caf\u00e9", "x:y", "x\r\ny", 1, :content_type,
      "content-type".encode("UTF-16LE"), "content-type".b, "CONTENT-LENGTH"]
  ].freeze
  VALUES = [
    ["text/plain", "14", "0", "012", "chunked", "Sun, 06 Nov 1994 08:49:37 GMT", "a=b; path=/", "x\ty", "", " spaced "],
    ["a\r\nb", "a\nb", "a\rb", "x\0y", "\x7f", "caf\u00e9", "caf\u00e9".b, "\xff".b, "1x", "-1", "1" * 19, "1" * 18,
      ["a", "b"], 14, nil, :sym, "14".encode("UTF-16LE"), "14".b, "15"]
  ].freeze

  def setup
    skip "the C head scanner is not built (`rake compile`)" unless FIELD_LINES
  end

  # The state both leave behind, as [lines bytes, lines encoding, content_length, transfer_encoding, date].
  def shape(fields)
    [fields.lines.b, fields.lines.encoding.name, fields.content_length, fields.transfer_encoding, fields.date]
  end

  # @return [Symbol] :filled, :left (the Ruby code takes them) or :refused (the Ruby code refuses them)
  def check(headers)
    reference = begin
      quietly { Herd::HTTP::ResponseHeaders.new(headers, fast_path: nil) }
    rescue Herd::HTTP::InvalidResponse, Encoding::CompatibilityError => e
      e
    end
    fields = Herd::HTTP::ResponseHeaders.allocate
    unless FIELD_LINES.fill(fields, headers)
      assert_empty fields.instance_variables, "nothing is set when the C code declines: #{headers.inspect}"
      return reference.is_a?(Exception) ? :refused : :left
    end

    refute_kind_of Exception, reference, "the C code took headers the Ruby code refuses: #{headers.inspect}"
    assert_equal shape(reference), shape(fields), headers.inspect
    assert_nil reference.connection
    assert_nil reference.hijack
    :filled
  end

  def test_the_common_headers_are_filled_as_the_ruby_code_fills_them
    assert_equal :filled, check({"content-type" => "text/plain", "content-length" => "14"})
    assert_equal :filled, check({})
    assert_equal :filled, check({"Date" => "Sun, 06 Nov 1994 08:49:37 GMT", "transfer-encoding" => "chunked"})
    assert_equal :filled, check({"content-length" => "12", "Content-Length" => "012"})
    fields = Herd::HTTP::ResponseHeaders.new({"content-type" => "text/html", "Content-Length" => "5", "date" => "x"})
    assert_equal "content-type: text/html\r\nContent-Length: 5\r\ndate: x\r\n", fields.lines
    assert_equal [5, false, true], [fields.content_length, fields.transfer_encoding, fields.date]
  end

  def test_what_the_c_code_declines_the_ruby_code_takes_or_refuses
    assert_equal :left, check({"connection" => "close"})
    assert_equal :left, check({"keep-alive" => "timeout=5"})
    assert_equal :left, check({"rack.hijack" => proc {}})
    assert_equal :left, check({"set-cookie" => ["a=1", "b=2"]})
    assert_equal :left, check({"content-length" => 14})
    assert_equal :left, check({"x" => "caf\u00e9"})
    assert_equal :left, check({"content-length" => "1" * 19})
    assert_equal :refused, check({"x" => "a\r\nb"})
    assert_equal :refused, check({"bad name" => "x"})
    assert_equal :refused, check({"content-length" => "1x"})
    assert_equal :refused, check({"content-length" => "1", "CONTENT-LENGTH" => "2"})
    assert_equal :refused, check({"content-length" => "1", "transfer-encoding" => "chunked"})
    assert_equal :refused, check({1 => "x"})
  end

  def test_a_hash_subclass_with_its_own_each_pair_is_left_to_the_ruby_code
    custom = Class.new(Hash) { def each_pair = yield("x-custom", "yes") }
    headers = custom.new.merge!("content-type" => "text/plain")
    refute FIELD_LINES.fill(Herd::HTTP::ResponseHeaders.allocate, headers)
    assert_equal "x-custom: yes\r\n", Herd::HTTP::ResponseHeaders.new(headers).lines
    assert FIELD_LINES.fill(Herd::HTTP::ResponseHeaders.allocate, Rack::Headers.new.merge!("content-type" => "text/plain"))

    plain = {"x-a" => "1"}
    def plain.each_pair = yield("x-b", "2")
    refute FIELD_LINES.fill(Herd::HTTP::ResponseHeaders.allocate, plain)
    assert_equal "x-b: 2\r\n", Herd::HTTP::ResponseHeaders.new(plain).lines
  end

  def test_a_body_part_of_a_string_subclass_is_left_to_the_ruby_code
    part = Class.new(String) { def bytesize = 99 }.new("abc")
    refute FIELD_LINES.response(+"", 200, {}, [part], "")
    assert_equal [nil, 99], [FIELD_LINES.response(+"", 200, {}, [+"abc"], "") && nil, written(200, {}, [part], fast_path: FIELD_LINES)[1]]
  end

  def test_fuzzed_headers_are_filled_exactly_as_the_ruby_code_fills_them_or_left_to_it
    random = Random.new(Integer(ENV.fetch("HERD_FUZZ_SEED", "20261124")))
    outcomes = Hash.new(0)
    3000.times do
      headers = Array.new(random.rand(0..6)) { [pick(NAMES, random), pick(VALUES, random)] }.to_h
      outcomes[check(headers)] += 1
    end
    warn outcomes.inspect if ENV["HERD_FUZZ_VERBOSE"]
    assert_operator outcomes[:filled], :>, 300, outcomes.inspect
    assert_operator outcomes[:left], :>, 100, outcomes.inspect
    assert_operator outcomes[:refused], :>, 100, outcomes.inspect
  end

  STATUSES = [[200, 201, 404, 500, 302], [204, 304, 101, 199, 999, 1000, "200", 200.0]].freeze
  PARTS = [["Hello, world!\n", "", "<p>x</p>", "caf\u00e9", "x" * 100], ["\xff\xfe".b, "caf\u00e9".b, "x" * 9000, 7, nil, :sym]].freeze

  # What a writer sends: the bytes, and what it reports after.
  def written(status, headers, body, fast_path:, head_request: false, keep_alive: false)
    io = StringIO.new(+"".b)
    writer = Herd::HTTP::ResponseWriter.new(io, head_request: head_request, fast_path: fast_path)
    writer.keep_alive = keep_alive
    quietly { writer.write(status, headers, body) }
    [io.string.b, writer.bytes_sent, writer.status, writer.committed?, writer.kept?]
  rescue Herd::HTTP::InvalidResponse, Encoding::CompatibilityError => e
    [e.class, io.string.b]
  end

  def body(random)
    case random.rand(12)
    when 0 then Class.new(Array).new([pick(PARTS, random)])
    when 1 then [pick(PARTS, random)].tap { |parts| parts.define_singleton_method(:to_path) { "/etc/hostname" } }
    when 2 then Array.new(65) { "x" }
    when 3 then pick(PARTS, random)
    else Array.new(random.rand(0..4)) { pick(PARTS, random) }
    end
  end

  def test_fuzzed_responses_are_written_in_c_exactly_as_in_ruby_or_left_to_it
    random = Random.new(Integer(ENV.fetch("HERD_FUZZ_SEED", "20261124")))
    outcomes = Hash.new(0)
    Herd::HTTP::HTTPDate.stub(:now, "Sun, 06 Nov 1994 08:49:37 GMT") do
      2000.times do
        status = pick(STATUSES, random)
        headers = Array.new(random.rand(0..4)) { [pick(NAMES, random), pick(VALUES, random)] }.to_h
        body = body(random)
        head_request = random.rand(8).zero?
        keep_alive = random.rand(3).zero?
        reference = written(status, headers, body, fast_path: nil, head_request: head_request, keep_alive: keep_alive)
        assert_equal reference, written(status, headers, body, fast_path: FIELD_LINES, head_request: head_request, keep_alive: keep_alive),
          [status, headers, body, head_request, keep_alive].inspect
        taken = status.is_a?(Integer) && !head_request && FIELD_LINES.response(+"", status, headers, body, "x\n")
        outcomes[taken ? :c : :ruby] += 1
        outcomes[:kept] += 1 if reference.last == true
      end
    end
    warn outcomes.inspect if ENV["HERD_FUZZ_VERBOSE"]
    assert_operator outcomes[:c], :>, 200, outcomes.inspect
    assert_operator outcomes[:ruby], :>, 200, outcomes.inspect
    assert_operator outcomes[:kept], :>, 100, outcomes.inspect
  end

  def test_a_plain_response_is_one_string_in_one_write
    io = StringIO.new(+"".b)
    writes = 0
    io.define_singleton_method(:write) { |*strings| writes += 1 and super(*strings) }
    writer = Herd::HTTP::ResponseWriter.new(io)
    writer.write(200, {"content-type" => "text/plain"}, ["Hello, ", "world!\n"])
    assert_equal 1, writes
    assert_match(/\AHTTP\/1.1 200 OK\r\ncontent-type: text\/plain\r\ncontent-length: 14\r\ndate: .+\r\nconnection: close\r\n\r\nHello, world!\n\z/, io.string)
    assert_equal 14, writer.bytes_sent
    assert_equal 200, writer.status
  end

  def test_the_switch_leaves_every_response_to_the_ruby_code
    code = 'require "herd/http"; print Herd::HTTP::ResponseHeaders::FAST_PATH.inspect'
    out, status = Open3.capture2({"HERD_C_EXTENSION" => "0"}, RbConfig.ruby, "-I", File.expand_path("../../lib", __dir__), "-e", code)
    assert status.success?
    assert_equal "nil", out
  end

  private

  # Ruby's -W warns of a /n regex against a non-ASCII UTF-8 value: what the
  # fuzzer sends on purpose.
  def quietly
    verbose, $VERBOSE = $VERBOSE, nil
    yield
  ensure
    $VERBOSE = verbose
  end

  def pick(pieces, random)
    pieces[random.rand(6).zero? ? 1 : 0].sample(random: random)
  end
end
