# frozen_string_literal: true

require "test_helper"
require_relative "../fixtures/http/socket_driver"
require_relative "../fixtures/http/accepted_requests"

module Herd
  # The requests of the accepted corpus through the handler, with the C head
  # scanner in front of the Ruby parser and with the Ruby parser alone: the
  # same 200 and the same env either way; and the C scanner's Request, when
  # it takes the head, the Ruby parser's.
  class HTTPAcceptedTest < Test
    include HTTPDriver

    SEES = ->(env) { [200, {"content-type" => "text/plain"}, ["#{env["REQUEST_METHOD"]} #{env["PATH_INFO"]} #{env["SERVER_PROTOCOL"]} #{env["rack.input"].read}"]] }
    # HeadScanner.unused_reason as the handler's parser sees it: nil uses C.
    PARSERS = {c: nil, ruby: "the Ruby parser alone (test)"}.freeze

    # Serves with the given parser behind the handler.
    def served_by(parser, request, **options)
      skip "the C head scanner is not built (`rake compile`)" if parser == :c && !HTTP::HeadScanner.built?
      HTTP::HeadScanner.stub(:unused_reason, PARSERS.fetch(parser)) { serve(request, app: SEES, **options) }
    end

    HTTPFixtures::AcceptedRequests::ALL.each do |fixture|
      PARSERS.each_key do |parser|
        define_method("test_#{parser}_#{fixture[:name].gsub(/\W+/, "_")}") do
          served = served_by(parser, fixture[:request])

          assert_equal 200, served.status, "#{fixture[:name]}: #{served.raw[0, 200].inspect}, log: #{served.log}"
          assert_equal fixture[:sees], served.body
          assert_nil served.exchange.error
        end
      end
    end

    # A worker's first read in C (HeadScanner.receive) drops the empty lines
    # as the SocketReader does: the Request the Ruby path makes, or the bytes.
    def test_the_c_first_read_drops_the_empty_lines_as_the_ruby_reader_does
      skip "the C head scanner is not built (`rake compile`)" unless HTTP::HeadScanner.built? && HTTP::HeadScanner.respond_to?(:receive)
      template = HTTP::EnvBuilder.new(HTTP::Options.new).template("localhost", "8080", "http")
      ruby = HTTP::Parser.new(scanner: nil)
      taken = HTTPFixtures::AcceptedRequests::ALL.count do |fixture|
        client, server = UNIXSocket.pair
        client.write(fixture[:request])
        received = HTTP::HeadScanner.receive(server, template, 8192, 65_536, 100)
        next assert_equal(fixture[:request], received, fixture[:name]) && false if received.is_a?(String)

        client.write(fixture[:request])
        reference = ruby.parse_in_ruby(HTTP::SocketReader.new(server, 1).read_head(8192, 65_536))
        assert_equal reference.to_a.values_at(0..4, 6..), received.to_a.values_at(0..4, 6..), fixture[:name]
        assert_same reference.method, received.method, "the Ruby parser's own method String: #{fixture[:name]}"
        reference.headers.each { |key, value| assert_equal value, received.headers[key], fixture[:name] }
        true
      ensure
        client&.close
        server&.close
      end
      assert_operator taken, :>=, 3, "the empty lines before a common head are dropped in C"
      client, server = UNIXSocket.pair
      ["#{"\r\n" * 5}GET / HTTP/1.1\r\nHost: a\r\n\r\n", "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", "\r\n\r\n"].each do |bytes|
        client.write(bytes)
        assert_equal bytes, HTTP::HeadScanner.receive(server, template, 8192, 65_536, 100), "handed over to the SocketReader"
      end
    ensure
      client&.close
      server&.close
    end

    def test_the_reader_drops_empty_lines_split_across_reads_and_refuses_one_too_many
      client, server = UNIXSocket.pair
      reader = HTTP::SocketReader.new(server, 1)
      client.write("\r\n\r")
      refute reader.head_decided?(8192, 65_536)
      client.write("\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")
      assert reader.head_decided?(8192, 65_536)
      assert_equal "GET / HTTP/1.1\r\nHost: a\r\n\r\n", reader.read_head(8192, 65_536)

      client.write("\r\n" * 5)
      error = assert_raises(HTTP::RequestError) { HTTP::SocketReader.new(server, 1).read_head(8192, 65_536) }
      assert_equal 400, error.status
    ensure
      client&.close
      server&.close
    end

    def test_empty_lines_alone_are_no_request
      client, server = UNIXSocket.pair
      idle = HTTP::SocketReader.new(server, 1, idle: 5)
      client.write("\r\n\r\n")
      refute idle.head_decided?(8192, 65_536)
      assert_predicate idle, :idle?, "a kept connection stays idle"
      refute_predicate idle, :received?
      client.close
      assert_nil idle.read_head(8192, 65_536), "closed with nothing but empty lines: no request, no error"
    ensure
      client&.close
      server&.close
    end

    # After a body: the CRLF a client sends behind it is no pipelined request.
    def test_empty_lines_after_a_body_are_not_a_next_request
      {"" => false, "\r\n" => false, "\r\n" * 4 => false, "\r\n" * 5 => true, "\r" => true, "\n" => true, "G" => true, "\r\nGET" => true}.each do |after, pipelined|
        reader = HTTP::SocketReader.new(StringIO.new, 1).received("hi#{after}".b) # read with the head
        reader.read_exactly(2) { |data| assert_equal "hi", data }
        assert_equal pipelined, reader.pipelined?, after.inspect
        refute_predicate reader, :buffered? unless pipelined
      end
    end

    def test_a_kept_connection_is_kept_after_a_body_and_its_crlf
      client, server = UNIXSocket.pair
      handler = HTTP::Handler.new(SEES, HTTP::Options.new(logger: StringIO.new, read_timeout: 1))
      client.write("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi\r\n")
      first = handler.call(server, remote_addr: "127.0.0.1", server_name: "localhost", server_port: 80, keep_alive: true)
      assert first.kept_alive
      client.write("\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
      reader = HTTP::SocketReader.new(server, 1, idle: 1)
      second = handler.call(server, remote_addr: "127.0.0.1", server_name: "localhost", server_port: 80, reader: reader, keep_alive: true)
      assert_equal [200, "/b", true], [second.status, second.target, second.kept_alive]
    ensure
      client&.close
      server&.close
    end

    def test_the_ruby_run_parses_in_ruby
      HTTP::HeadScanner.stub(:unused_reason, PARSERS[:ruby]) { assert_nil HTTP::Parser.new.instance_variable_get(:@scanner) }
    end

    def test_the_c_scanner_returns_the_ruby_parsers_request_or_leaves_the_head
      skip "the C head scanner is not built (`rake compile`)" unless HTTP::HeadScanner.built?
      ruby = HTTP::Parser.new(scanner: nil)
      scanned = HTTPFixtures::AcceptedRequests::ALL.count do |fixture|
        head = fixture[:request].byteslice(0, fixture[:request].index("\r\n\r\n") + 4)
        request = HTTP::HeadScanner.scan(head, 100) or next false
        reference = ruby.parse_in_ruby(head)
        assert_equal reference.to_a, request.to_a, fixture[:name]
        assert_same reference.method, request.method, "the Ruby parser's own method String: #{fixture[:name]}"
        assert_same reference.version, request.version
        true
      end
      assert_operator scanned, :>=, 2
    end
  end
end
