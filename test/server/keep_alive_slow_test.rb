# frozen_string_literal: true

require "test_helper"
require "support/server_harness"
require "support/kept_connections"
require "herd/http"

# `http keep_alive: SECONDS`: a worker keeps a connection open after a
# response it frames itself, for the client's next request, and closes it
# after the idle time, without a 408; everything else still closes.
class KeepAliveSlowTest < Herd::Test
  include Herd::ServerTest
  include Herd::KeptConnections

  APP = <<~RUBY
    run ->(env) {
      case env["PATH_INFO"]
      when "/stream" then [200, {"content-type" => "text/plain"}, Enumerator.new { |out| out << "a" << "b" }]
      when "/echo" then [200, {"content-type" => "text/plain"}, [env["rack.input"].read]]
      when "/length" then [200, {"content-length" => "5"}, ["hello"]]
      when "/wrong-length" then [200, {"content-length" => "9"}, ["hello"]]
      when "/busy" then $stderr.puts("busy: serving"); sleep 2; [200, {}, ["done"]]
      when "/tempfiles" then [200, {}, [Dir.children("/proc/self/fd").count { |fd| File.readlink("/proc/self/fd/\#{fd}").include?("herd-body") rescue false }.to_s]]
      else [200, {"content-type" => "text/plain"}, ["pid=\#{Process.pid} path=\#{env["PATH_INFO"]}"]]
      end
    }
  RUBY

  def keep_alive_server(seconds = 2, env: {}, read_timeout: 1, more: "")
    serve(app: APP, config: "workers 1\nhttp keep_alive: #{seconds}, read_timeout: #{read_timeout}\n#{more}", env: env)
  end

  # A request on a connection of its own that keeps the worker busy (2 s),
  # once the worker is in it.
  def keep_busy(server)
    before = server.mark
    thread = Thread.new { server.get("/busy", "Connection: close\r\n") }
    server.wait_for(/busy: serving/, after: before)
    thread
  end

  # A connection that was served once and kept.
  def kept_connection(server)
    socket = connect(server)
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    head, = read_response(socket)
    refute_match(/^connection:/i, head)
    socket
  end

  # nil once the server closed the connection (what arrived before, else).
  def read_to_end(socket)
    Timeout.timeout(10) { socket.read }
  end

  def test_requests_follow_each_other_on_one_connection_in_c_and_in_ruby
    [{}, {"HERD_C_EXTENSION" => "0"}].each do |env|
      server = keep_alive_server(env: env)
      socket = connect(server)
      bodies = %w[/one /two /three].map do |path|
        socket.write("GET #{path} HTTP/1.1\r\nHost: x\r\n\r\n")
        head, body = read_response(socket)
        assert_match(%r{\AHTTP/1.1 200 OK\r\n}, head, env.inspect)
        refute_match(/^connection:/i, head, "kept open: no connection header (HTTP/1.1's default)")
        body
      end
      pids = bodies.map { |body| body[/pid=(\d+)/, 1] }
      assert_equal %w[/one /two /three], bodies.map { |body| body[/path=(\S+)/, 1] }
      assert_equal 1, pids.uniq.size
      socket.write("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
      assert_equal "hello", read_response(socket).last, "a body on a kept connection"
      socket.write("GET /length HTTP/1.1\r\nHost: x\r\n\r\n")
      assert_equal "hello", read_response(socket).last, "the application's content-length, when it is the body's"
      server.cleanup
    end
  end

  def test_what_cannot_stay_open_closes_after_its_response
    server = keep_alive_server
    {
      "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" => "the client asked",
      "GET / HTTP/1.1\r\nHost: x\r\nConnection: foo, Close\r\n\r\n" => "close among other tokens",
      "GET / HTTP/1.0\r\n\r\n" => "HTTP/1.0",
      "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n" => "a streamed body",
      "GET /wrong-length HTTP/1.1\r\nHost: x\r\n\r\n" => "a content-length that is not the body's",
      "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n" => "a pipelined request",
      "GET / HTTP/1.1\r\nHost: x\r\nX: \x01\r\n\r\n" => "a refused request"
    }.each do |request, why|
      socket = connect(server)
      socket.write(request)
      response = read_to_end(socket)
      assert_match(/\r\nconnection: close\r\n/, response, why)
      assert_equal 1, response.scan(%r{HTTP/1\.[01] \d{3} }).size, "#{why}: one response, then the end"
    end
  end

  def test_an_idle_kept_connection_is_closed_without_a_408
    server = keep_alive_server(1)
    socket = kept_connection(server)
    assert_equal "", read_to_end(socket), "closed after the idle time, nothing written"
    assert_match(/pid=/, server.get("/"), "the worker serves on")
  end

  def test_a_kept_connection_whose_next_head_stalls_gets_408
    server = keep_alive_server(5)
    socket = kept_connection(server)
    socket.write("GET /slow HTTP/1.1\r\n") # read_timeout 1 from here
    assert_match(%r{\AHTTP/1.1 408 }, read_to_end(socket))
  end

  def test_a_stopping_worker_closes_its_idle_kept_connections
    server = keep_alive_server(60)
    socket = kept_connection(server)
    server.signal(:QUIT)
    assert_equal "", read_to_end(socket), "closed at once, not after 60 s"
    assert_predicate server.wait, :success?
  end

  # The idle time ran out while the worker was busy, then a byte came: no
  # new read_timeout for it, or the worker would wait in its read (30 s
  # here) while other clients queue.
  def test_a_byte_after_the_idle_time_buys_no_time_in_the_worker
    server = keep_alive_server(1, read_timeout: 30)
    socket = kept_connection(server)
    busy = keep_busy(server)
    sleep 1.2 # past the kept connection's idle time, the worker still busy
    socket.write("G")
    busy.join(10)
    assert_match(/pid=/, Timeout.timeout(10) { server.get("/", "Connection: close\r\n") }, "the next client is served")
    assert_match(%r{\AHTTP/1.1 408 }, read_to_end(socket))
  end

  # A request waiting unread on a kept connection when the worker is told
  # to stop is served, not reset.
  def test_a_stopping_worker_serves_a_request_already_waiting_on_a_kept_connection
    server = keep_alive_server(30)
    socket = kept_connection(server)
    busy = keep_busy(server)
    socket.write("GET /second HTTP/1.1\r\nHost: x\r\n\r\n")
    server.signal(:QUIT)
    busy.join(10)
    response = read_to_end(socket)
    assert_match(%r{\AHTTP/1.1 200 OK\r\n}, response)
    assert_match(/\r\nconnection: close\r\n.*path=\/second\z/m, response, "the last one on it")
    assert_predicate server.wait, :success?
  end

  def test_request_bodies_spooled_on_a_kept_connection_are_closed
    server = keep_alive_server(5, more: "http body_spool_threshold: 10\n")
    socket = connect(server)
    5.times do
      socket.write("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n#{"a" * 100}")
      assert_equal "a" * 100, read_response(socket).last
    end
    socket.write("GET /tempfiles HTTP/1.1\r\nHost: x\r\n\r\n")
    assert_equal "0", read_response(socket).last
  end

  # The end of a kept connection, by its client or its idle time, is not a
  # request: not counted, not passed to after_request_complete.
  def test_a_kept_connections_end_is_not_a_request
    hook = "after_request_complete { |*args| $stderr.puts \"hooked: \#{args.last.method} \#{args.last.target}\" }\n"
    server = keep_alive_server(1, more: hook)
    kept_connection(server).close
    kept_connection(server)
    sleep 1.5 # past its idle time
    before = server.mark
    server.get("/last")
    server.wait_for(%r{hooked: GET /last}, after: before)
    assert_equal ["GET /", "GET /", "GET /last"], server.lines.grep(/hooked:/).map { |line| line[/hooked: (.*)$/, 1] }
  end

  def test_without_the_option_every_response_closes_its_connection
    server = serve(app: APP, config: "workers 1\n")
    socket = connect(server)
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    response = read_to_end(socket)
    assert_match(/\r\nconnection: close\r\n/, response)
  end

  def test_the_option_is_checked
    error = assert_raises(Herd::ConfigError) { Herd::HTTP::Options.new(keep_alive: 0) }
    assert_match(/keep_alive must be false or a positive number of seconds/, error.message)
    assert_equal 5, Herd::HTTP::Options.new(keep_alive: 5).keep_alive
    assert_equal false, Herd::HTTP::Options.new.keep_alive
  end
end
