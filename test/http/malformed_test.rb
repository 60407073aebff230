# frozen_string_literal: true

require "test_helper"
require_relative "../fixtures/http/socket_driver"
require_relative "../fixtures/http/malformed_requests"

module Herd
  # Every malformed request in the corpus gets its status and a closed
  # connection, with the C head scanner in front of the Ruby parser and with
  # the Ruby parser alone; the application never runs and the handler never
  # raises.
  class HTTPMalformedTest < Test
    include HTTPDriver

    NEVER = ->(env) { raise "the application must not run for a refused request: #{env["REQUEST_METHOD"]} #{env["PATH_INFO"]}" }
    # HeadScanner.unused_reason as the handler's parser sees it: nil uses C.
    PARSERS = {c: nil, ruby: "the Ruby parser alone (test)"}.freeze

    # Serves with the given parser behind the handler.
    def served_by(parser, request, **options)
      skip "the C head scanner is not built (`rake compile`)" if parser == :c && !HTTP::HeadScanner.built?
      HTTP::HeadScanner.stub(:unused_reason, PARSERS.fetch(parser)) { serve(request, app: NEVER, **options) }
    end

    HTTPFixtures::MalformedRequests::ALL.each do |fixture|
      PARSERS.each_key do |parser|
        define_method("test_#{parser}_#{fixture[:name].gsub(/\W+/, "_")}") do
          served = served_by(parser, fixture[:request], options: {read_timeout: 1, **fixture[:options]}, close_write: fixture[:close_write])

          assert_equal fixture[:status], served.status, "#{fixture[:name]}: #{served.raw[0, 200].inspect}, log: #{served.log}"
          assert_equal "close", served.header("connection")
          assert_kind_of HTTP::RequestError, served.exchange.error
          assert_equal fixture[:status], served.exchange.error.status
          assert_equal fixture[:status], served.exchange.status
          assert_match(/herd: #{fixture[:status]} /, served.log)
          assert_empty served.errors, "no backtrace for a client error"
        end
      end
    end

    def test_the_corpus_covers_every_refusal_status
      assert_equal [400, 408, 413, 414, 431, 501, 505], HTTPFixtures::MalformedRequests::ALL.map { |c| c[:status] }.uniq.sort
    end

    def test_a_smuggled_request_is_never_served
      smuggled = "GET /admin HTTP/1.1\r\nHost: example.com\r\n\r\n"
      request = "POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: #{smuggled.bytesize + 5}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n#{smuggled}"
      served = serve(request, app: NEVER)

      assert_equal 400, served.status
      assert_equal 1, served.raw.scan("HTTP/1.1 ").size, "exactly one response"
      assert_empty served.seen
    end

    def test_a_client_that_sends_nothing_and_closes_gets_nothing_and_no_error
      served = serve("", app: NEVER, close_write: true)

      assert_equal "", served.raw
      assert_nil served.exchange.error
      assert_nil served.exchange.status
      assert_nil served.exchange.method
      assert_empty served.log
    end

    def test_a_client_that_sends_nothing_gets_408
      served = serve("", app: NEVER, options: {read_timeout: 0.1})

      assert_equal 408, served.status
    end

    def test_the_slowloris_head_deadline_is_for_the_whole_head
      pieces = ["GET / HTTP/1.1\r\n"] + Array.new(20) { |i|
        -> {
          sleep 0.05
          "X-#{i}: y\r\n"
        }
      }
      client, server = UNIXSocket.pair
      handler = HTTP::Handler.new(NEVER, HTTP::Options.new(read_timeout: 0.3, logger: StringIO.new))
      serving = Thread.new { handler.call(server, remote_addr: "127.0.0.1", server_name: "localhost", server_port: 80) }
      pieces.each do |piece|
        client.write(piece.respond_to?(:call) ? piece.call : piece)
      rescue Errno::EPIPE, Errno::ECONNRESET
        break
      end

      assert_equal 408, serving.value.status
    ensure
      client&.close
    end

    def test_a_bare_cr_split_across_reads_is_refused_before_the_head_ends
      served = serve(["GET / HTTP/1.1\r\nHost: x\r", "X-A: b\r\n"], app: NEVER)

      assert_equal 400, served.status
      assert_match(/bare CR or LF/, served.exchange.error.message)
    end

    def test_the_request_is_refused_before_the_on_request_callback_when_the_head_is_bad
      served = serve("GET / HTTP/1.1\r\nHost: x\r\nX : y\r\n\r\n", app: NEVER)

      assert_empty served.seen
      assert_nil served.exchange.method
    end

    def test_an_oversized_body_is_refused_after_the_callback_with_method_and_target
      served = serve("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", app: NEVER, options: {max_body: 10})

      assert_equal 413, served.status
      assert_equal [["POST", "/upload"]], served.seen
      assert_equal "POST", served.exchange.method
      assert_equal "/upload", served.exchange.target
    end

    def test_413_is_sent_instead_of_100_continue
      served = serve("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n", app: NEVER, options: {max_body: 10})

      assert_equal 413, served.status
      refute_includes served.raw, "100 Continue"
    end

    # Closing a TCP socket with unread input sends a reset, which destroys the
    # response at the client; herd drains what already arrived first.
    def test_a_refused_client_reads_the_response_even_with_unread_body_bytes
      listener = TCPServer.new("127.0.0.1", 0)
      client = TCPSocket.new("127.0.0.1", listener.addr[1])
      accepted = listener.accept
      client.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 40000\r\n\r\n#{"x" * 40_000}")
      accepted.wait_readable(5)
      sleep 0.05 # let the whole body reach the server's receive buffer
      HTTP::Handler.new(NEVER, HTTP::Options.new(max_body: 10, logger: StringIO.new)).call(accepted, remote_addr: "127.0.0.1", server_name: "localhost", server_port: 80)

      assert_match(/\AHTTP\/1\.1 413 /, client.read)
    ensure
      client&.close
      listener&.close
    end

    def test_error_responses_to_head_requests_have_no_body
      served = serve("HEAD / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", app: NEVER, options: {max_body: 10})

      assert_equal 413, served.status
      assert_equal "", served.raw_body
    end
  end
end
