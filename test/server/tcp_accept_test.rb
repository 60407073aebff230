# frozen_string_literal: true

require "test_helper"
require "socket"
require "io/nonblock"
require "rbconfig"
require "timeout"
require "herd/http"
require "herd/server/listener"
require "support/waiting"

# herd's C accept (Herd::Server::TCPAccept) against Ruby's: the same socket,
# the same REMOTE_ADDR, nil when there is nothing to take.
class TCPAcceptTest < Herd::Test
  def setup
    skip "herd's C accept is not built (`rake compile`; it needs accept4)" unless defined?(Herd::Server::TCPAccept)
    @server = TCPServer.new("127.0.0.1", 0)
    @server.nonblock = true
    @clients = []
  end

  def teardown
    @clients.each { |io| io.close unless io.closed? }
    @server&.close
  end

  def connect(server = @server)
    TCPSocket.new(server.local_address.ip_address, server.local_address.ip_port).tap { |client| @clients << client }
  end

  def c_accept(server = @server, direct: true)
    Herd::Server::TCPAccept.accept(server.fileno, TCPSocket, direct)&.tap { |socket, _| @clients << socket }
  end

  def shape(socket)
    [socket.class, socket.sync, socket.binmode?, socket.close_on_exec?, socket.do_not_reverse_lookup, socket.nonblock?,
      socket.external_encoding]
  end

  def test_nothing_to_take_is_nil
    assert_nil c_accept
  end

  def test_the_socket_and_address_are_rubys
    connect
    socket, address = wait_for { c_accept }
    connect
    ruby = wait_for { @server.accept_nonblock(exception: false).then { (_1 == :wait_readable) ? nil : _1 } }
    @clients << ruby
    assert_equal shape(ruby), shape(socket)
    assert_equal Socket.unpack_sockaddr_in(ruby.getpeername)[1], address
    assert_equal Socket.unpack_sockaddr_in(socket.getpeername)[1], address
    assert_equal Encoding::BINARY, address.encoding
    socket.write("hello")
    assert_equal "hello", @clients.first.read(5)
  end

  # On CRuby one of the two ways to make the socket without for_fd is there
  # (Ruby >= 3.3's rb_io_open_descriptor, or the IO structure before): if
  # extconf stopped finding it, the comparison below would compare for_fd
  # with itself.
  def test_the_socket_is_made_without_for_fd_on_cruby
    skip "CRuby only" unless RUBY_ENGINE == "ruby"

    assert Herd::Server::TCPAccept::DIRECT, "extconf found neither rb_io_open_descriptor nor rb_io_t's fd and mode"
  end

  # The socket made without for_fd (no fstat) is the one for_fd makes,
  # BasicSocket.do_not_reverse_lookup either way included.
  def test_made_directly_or_through_for_fd_the_same
    [true, false].each do |lookup|
      BasicSocket.do_not_reverse_lookup = lookup
      peers = Array.new(2) { connect }
      direct, = wait_for { c_accept }
      through_for_fd, = wait_for { c_accept(direct: false) }
      assert_equal shape(through_for_fd), shape(direct)
      assert_equal lookup, direct.do_not_reverse_lookup
      direct.write("both")
      through_for_fd.write("ways")
      said = peers.to_h { [_1.read(4), _1] }
      assert_equal %w[both ways], said.keys.sort
      direct.close
      assert_equal "", said["both"].read, "closing the socket closes its descriptor"
    end
  ensure
    BasicSocket.do_not_reverse_lookup = true
  end

  # A client accepted on a standard descriptor (stdin closed) stays open
  # across exec, as Ruby's own accept leaves it.
  def test_a_client_on_a_standard_descriptor_is_not_close_on_exec
    script = <<~RUBY
      require "socket"
      require "io/nonblock"
      require "herd/http"
      server = TCPServer.new("127.0.0.1", 0)
      server.nonblock = true
      client = TCPSocket.new("127.0.0.1", server.local_address.ip_port)
      require "fiddle" # Ruby never closes descriptors 0-2 itself
      Fiddle::Function.new(Fiddle.dlopen(nil)["close"], [Fiddle::TYPE_INT], Fiddle::TYPE_INT).call(0)
      socket = nil
      socket, = Herd::Server::TCPAccept.accept(server.fileno, TCPSocket) until socket
      print [socket.fileno, socket.close_on_exec?].inspect
      client.close
    RUBY
    reader, writer = IO.pipe
    pid = Process.spawn(RbConfig.ruby, "-I", File.expand_path("../../lib", __dir__), "-e", script, in: File::NULL, out: writer)
    writer.close
    out = Timeout.timeout(30) { reader.read }
    _, status = Process.wait2(pid)
    assert status.success?
    assert_equal "[0, false]", out
  ensure
    reader&.close
  end

  def test_ipv6
    server = begin
      TCPServer.new("::1", 0)
    rescue SystemCallError
      skip "no IPv6 loopback here"
    end
    connect(server)
    _, address = wait_for { c_accept(server) }
    assert_equal "::1", address
  ensure
    server&.close
  end

  # An exception that comes while accept is called (Thread#raise, a
  # signal's handler) must not lose a descriptor accept4 returned.
  def test_an_interrupt_right_after_accept_loses_no_descriptor
    interrupt = Class.new(StandardError)
    sockets_before = open_sockets
    connections = 200
    connections.times { connect }
    accepted = []
    stop = false
    ready = false
    taker = Thread.new do
      Thread.handle_interrupt(interrupt => :never) do
        ready = true
        until stop
          begin
            Thread.handle_interrupt(interrupt => :immediate) { c_accept&.then { accepted << _1.first } }
          rescue interrupt
            nil
          end
        end
      end
    end
    Thread.pass until ready
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
    while accepted.size < connections && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      taker.raise(interrupt)
      Thread.pass
    end
    stop = true
    taker.join(5)
    [*@clients, *accepted].each { |io| io.close unless io.closed? }
    @clients.clear
    assert_equal sockets_before, open_sockets, "every accepted descriptor was wrapped and closed"
  end

  def test_a_worker_listener_takes_connections_through_it_and_a_unix_one_does_not
    listener = Herd::Server::Listener.new(Socket.for_fd(@server.fileno).tap { _1.autoclose = false })
    @server.nonblock = false
    listener.accept_with(Herd::Server::TCPAccept)
    assert @server.nonblock?, "accept_with makes the listener non-blocking: the C accept holds the GVL"
    assert_nil listener.accept
    connect
    client, address = wait_for { listener.accept }
    @clients << client
    assert_kind_of TCPSocket, client
    assert_equal "127.0.0.1", address

    Dir.mktmpdir do |dir|
      unix = Herd::Server::Listener.new(UNIXServer.new(File.join(dir, "s")))
      unix.accept_with(Herd::Server::TCPAccept)
      UNIXSocket.new(File.join(dir, "s")).then { @clients << _1 }
      client, address = wait_for { unix.accept }
      @clients << client
      assert_kind_of UNIXSocket, client
      assert_equal Herd::Server::Listener::LOCAL_PEER, address
      unix.close
    end
  end

  private

  def open_sockets
    Dir.children("/proc/self/fd").count { |fd| File.readlink("/proc/self/fd/#{fd}").start_with?("socket:") rescue false } # rubocop:disable Style/RescueModifier -- a descriptor closed while listed
  end

  def wait_for(&accept)
    Herd::Waiting.wait_until("a connection", timeout: 5, interval: 0.01, &accept)
  end
end
