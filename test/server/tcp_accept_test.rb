# frozen_string_literal: true

require "test_helper"
require "socket"
require "io/nonblock"
require "herd/http"
require "herd/server/listener"

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

  def c_accept(server = @server)
    Herd::Server::TCPAccept.accept(server.fileno, TCPSocket)&.tap { |socket, _| @clients << socket }
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

  # A listener someone made blocking costs a wait, not a process that holds
  # the GVL: other threads run, and the wait can be interrupted.
  def test_a_blocking_listener_waits_without_the_gvl_and_can_be_interrupted
    @server.nonblock = false
    waiting = Thread.new { c_accept }
    in_accept(waiting)
    connect # the GVL is free, or this line would never run
    socket, address = waiting.value
    assert_kind_of TCPSocket, socket
    assert_equal "127.0.0.1", address

    stuck = Thread.new { c_accept }
    in_accept(stuck)
    stuck.kill
    assert stuck.join(5), "the thread in accept could not be killed"
  end

  def test_a_worker_listener_takes_connections_through_it_and_a_unix_one_does_not
    listener = Herd::Server::Listener.new(Socket.for_fd(@server.fileno).tap { _1.autoclose = false })
    listener.accept_with(Herd::Server::TCPAccept)
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

  ACCEPT4 = {"x86_64" => 288, "aarch64" => 242}[RbConfig::CONFIG["host_cpu"]]

  # Until the thread is in accept4 (its /proc syscall line says so), where
  # the kernel tells; a short pause elsewhere.
  def in_accept(thread)
    syscall = "/proc/self/task/#{thread.native_thread_id}/syscall" if thread.respond_to?(:native_thread_id)
    return sleep(0.2) unless ACCEPT4 && syscall && File.readable?(syscall)

    wait_for { File.read(syscall).start_with?("#{ACCEPT4} ") }
  end

  def wait_for(seconds = 5)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    loop do
      result = yield
      return result if result
      flunk "nothing came within #{seconds} s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.01
    end
  end
end
