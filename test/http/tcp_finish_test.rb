# frozen_string_literal: true

require "test_helper"
require "socket"
require "stringio"
require "herd/http"

module Herd
  # How a response ends on TCP: the client has the whole response and its
  # end of stream as soon as the last byte is written, before body.close
  # and rack.response_finished run; the last write goes with MSG_MORE (the
  # FIN rides with the data), and a short send is completed.
  class HTTPTCPFinishTest < Test
    GET = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"

    def setup
      @listener = TCPServer.new("127.0.0.1", 0)
      @client = TCPSocket.new("127.0.0.1", @listener.local_address.ip_port)
      @server = @listener.accept
    end

    def teardown
      [@client, @server, @listener].each { |io| io.close unless io.nil? || io.closed? }
    end

    def handle(app)
      Thread.new { HTTP::Handler.new(app).call(@server, remote_addr: "127.0.0.1", server_name: "localhost", server_port: 80) }
    end

    # The Ruby send and shutdown (BasicSocket#send, then #shutdown), as
    # without the C extension, for the tests that stub the socket's #send.
    def with_ruby_send
      saved = HTTP::ResponseWriter::FINAL_SEND
      HTTP::ResponseWriter.send(:remove_const, :FINAL_SEND)
      HTTP::ResponseWriter.const_set(:FINAL_SEND, nil)
      yield
    ensure
      HTTP::ResponseWriter.send(:remove_const, :FINAL_SEND)
      HTTP::ResponseWriter.const_set(:FINAL_SEND, saved)
    end

    def final_send
      HTTP::ResponseWriter::FINAL_SEND or skip "herd's C extension is not built (`rake compile`)"
    end

    # A slow body.close or response_finished callback (a log flush, metrics)
    # must not hold the client: it reads to EOF while either still waits.
    def test_the_client_has_its_eof_before_a_slow_body_close
      assert_client_done_while(:body_close)
    end

    def test_the_client_has_its_eof_before_slow_response_finished_callbacks
      assert_client_done_while(:response_finished)
    end

    # The same when the application raised: its 500 is not held either.
    def test_a_500_reaches_the_client_before_slow_response_finished_callbacks
      release = Queue.new
      app = lambda do |env|
        env["rack.response_finished"] << ->(*) { release.pop }
        raise "broken"
      end
      @client.write(GET)
      handler = HTTP::Handler.new(app, HTTP::Options.new(errors: StringIO.new, logger: StringIO.new))
      thread = Thread.new { handler.call(@server, remote_addr: "127.0.0.1", server_name: "localhost", server_port: 80) }

      assert_match(/\AHTTP\/1\.1 500 /, Timeout.timeout(5) { @client.read })
      assert thread.alive?
    ensure
      release << :go
      thread&.join(5)
    end

    def assert_client_done_while(slow)
      release = Queue.new
      started = Queue.new
      body = ["hello"]
      body.define_singleton_method(:close) { started << :body_close && release.pop } if slow == :body_close
      app = lambda do |env|
        env["rack.response_finished"] << ->(*) { started << :response_finished && release.pop } if slow == :response_finished
        [200, {"content-type" => "text/plain"}, body]
      end
      @client.write(GET)
      handler = handle(app)
      response = Timeout.timeout(5) { @client.read }

      assert_match(/\AHTTP\/1\.1 200 OK\r\n.*\r\n\r\nhello\z/m, response)
      assert_equal slow, Timeout.timeout(5) { started.pop }
      assert handler.alive?, "#{slow} still runs while the client has read everything"
      release << :go
      exchange = Timeout.timeout(5) { handler.value }
      assert_equal 200, exchange.status
      assert_nil exchange.error
    ensure
      release << :go
      handler&.join(5)
    end

    def test_the_last_write_goes_with_msg_more_and_a_short_send_is_completed
      with_ruby_send { assert_short_send_completed }
    end

    def assert_short_send_completed
      flags = []
      # The kernel may take less than asked; here it always does.
      @server.define_singleton_method(:send) do |string, flag|
        flags << flag
        super(string.byteslice(0, 10), flag)
      end
      body = "x" * 5000
      @client.write(GET)
      exchange = Timeout.timeout(5) { handle(->(_env) { [200, {"content-type" => "text/plain"}, [body]] }).value }
      response = Timeout.timeout(5) { @client.read }

      assert_equal [Socket::MSG_MORE], flags
      assert response.end_with?("\r\n\r\n#{body}"), "the whole body arrived"
      assert_equal response.bytesize, exchange.bytes_sent + response.index("\r\n\r\n") + 4
    end

    # Bytes the client sent that herd never reads (a stray CRLF after a
    # body, a pipelined request) make close(2) send a reset, which drops
    # whatever the socket still holds: the response must be out before.
    def test_unread_input_does_not_cost_the_response
      extra = "GET /second HTTP/1.1\r\nHost: x\r\n\r\n"
      server = @server
      app = lambda do |_env|
        @client.write(extra)
        IO.select([server], nil, nil, 5) # the extra bytes wait, unread, in the server's socket
        [200, {"content-type" => "text/plain"}, ["hello"]]
      end
      @client.write(GET)
      exchange = Timeout.timeout(5) { handle(app).value }
      received = +""
      begin
        Timeout.timeout(5) { loop { received << @client.readpartial(4096) } }
      rescue EOFError, Errno::ECONNRESET
        nil
      end

      assert_equal 200, exchange.status
      assert_match(/\AHTTP\/1\.1 200 OK\r\n.*\r\n\r\nhello\z/m, received)
    end

    # With the C extension the send and the shutdown are one call: the
    # whole response, and the client's end of stream with it.
    def test_the_c_final_send_sends_the_whole_response_and_ends_it
      sent = []
      original = final_send.method(:call)
      final_send.stub(:call, ->(io, string) { sent << string.bytesize && original.call(io, string) }) do
        @client.write(GET)
        exchange = Timeout.timeout(5) { handle(->(_env) { [200, {"content-type" => "text/plain"}, ["hello"]] }).value }
        response = Timeout.timeout(5) { @client.read }

        assert_equal [response.bytesize], sent, "one call, all of it"
        assert_match(/\r\n\r\nhello\z/, response)
        assert_equal 5, exchange.bytes_sent
      end
    end

    # The kernel takes what fits: the rest is the caller's to write, and
    # the connection is not shut down before it is.
    def test_a_short_c_final_send_leaves_the_rest_and_the_end_to_the_caller
      small_buffers
      string = "x" * 4_000_000
      sent = final_send.call(@server, string)
      assert_operator sent, :>, 0
      assert_operator sent, :<, string.bytesize
      writer = Thread.new { @server.write(string.byteslice(sent..)) }
      received = +""
      Timeout.timeout(10) { received << @client.readpartial(65_536) while received.bytesize < string.bytesize }
      writer.join(5)
      assert_equal string, received
      assert_nil IO.select([@client], nil, nil, 0.2), "no end of stream before the caller's shutdown"
      @server.shutdown(Socket::SHUT_WR)
      assert_nil Timeout.timeout(5) { @client.read(1) }
    end

    # When nothing fits, 0: never a wait with the GVL held.
    def test_a_c_final_send_into_a_full_buffer_sends_nothing
      small_buffers
      results = Array.new(400) { final_send.call(@server, "x" * 65_536) }
      assert_includes results, 0
    end

    def small_buffers
      @server.setsockopt(Socket::SOL_SOCKET, Socket::SO_SNDBUF, 4096)
    end

    def test_a_c_final_send_to_a_gone_client_raises_as_basic_socket_send_does
      @client.close
      error = assert_raises(SystemCallError) do
        # The first send may still be taken; the reset makes a later one fail.
        5.times { final_send.call(@server, "x" * 100_000) && sleep(0.05) }
      end
      assert_kind_of(Errno::EPIPE.superclass, error)
      assert_includes [Errno::EPIPE, Errno::ECONNRESET], error.class
    end

    # An exception landing after the send still lets the response go.
    def test_the_response_goes_even_when_the_send_is_interrupted
      with_ruby_send { assert_response_goes_when_the_send_is_interrupted }
    end

    def assert_response_goes_when_the_send_is_interrupted
      released = Queue.new
      @server.define_singleton_method(:send) { |*args| super(*args).tap { raise Interrupt, "landed after the send" } }
      body = ["hello"]
      body.define_singleton_method(:close) { released.pop }
      @client.write(GET)
      handler = Thread.new do
        HTTP::Handler.new(->(_env) { [200, {"content-type" => "text/plain"}, body] })
          .call(@server, remote_addr: "127.0.0.1", server_name: "localhost", server_port: 80)
      rescue Interrupt
        :interrupted
      end
      response = Timeout.timeout(5) { @client.read }

      assert_match(/\r\n\r\nhello\z/, response)
      assert handler.alive?, "body.close still waits: the response did not wait for it"
    ensure
      released << :go
      handler&.join(5)
    end

    # A child the application forked keeps the descriptor open after the
    # worker closes it: the client must get its end all the same.
    def test_a_child_holding_the_socket_does_not_hold_the_client
      assert_eof_while_a_child_holds_the_socket(["hello"], /\r\n\r\nhello\z/)
    end

    def test_a_child_holding_the_socket_does_not_hold_a_streamed_response
      assert_eof_while_a_child_holds_the_socket(Enumerator.new { |out| out << "hello" }, /hello\r\n0\r\n\r\n\z/)
    end

    def assert_eof_while_a_child_holds_the_socket(body, ending)
      child = nil
      app = lambda do |_env|
        child = Process.fork { sleep 30 }
        [200, {"content-type" => "text/plain"}, body]
      end
      @client.write(GET)
      Timeout.timeout(5) { handle(app).value }

      assert_match ending, Timeout.timeout(5) { @client.read }
    ensure
      kill_and_reap(child)
    end

    # Streamed bodies and partial hijacks write as before: no MSG_MORE.
    def test_a_streamed_body_is_not_held
      flags = []
      @server.define_singleton_method(:send) { |*args| flags << args.last && super(*args) }
      final_sends = []
      @client.write(GET)
      body = Enumerator.new { |out| out << "a" << "b" }
      stub_final_send(final_sends) { Timeout.timeout(5) { handle(->(_env) { [200, {}, body] }).value } }

      assert_match(/1\r\na\r\n1\r\nb\r\n0\r\n\r\n\z/, Timeout.timeout(5) { @client.read })
      assert_empty flags
      assert_empty final_sends
    end

    def stub_final_send(calls, &block)
      return yield unless HTTP::ResponseWriter::FINAL_SEND

      HTTP::ResponseWriter::FINAL_SEND.stub(:call, ->(*args) { calls << args }, &block)
    end
  end
end
