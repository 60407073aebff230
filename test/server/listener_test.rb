# frozen_string_literal: true

require "test_helper"
require "herd/server"
require "tmpdir"

class ListenerTest < Herd::Test
  Spec = Herd::Server::Listener::Spec

  def bind(**options)
    @listener = Herd::Server::Listener.bind(Spec.new(address: "127.0.0.1:0", **options).validate!)
  end

  def teardown
    @listener&.socket&.close
  end

  def option(level, name)
    @listener.socket.getsockopt(level, name).int
  end

  def test_a_bare_spec_has_tcp_nodelay_and_no_deferred_accept
    bind
    assert_equal 1, option(:TCP, :NODELAY)
    assert_equal 0, option(:TCP, :DEFER_ACCEPT) if Socket.const_defined?(:TCP_DEFER_ACCEPT)
    assert_equal @listener.port.to_s, @listener.port_string
    assert @listener.port_string.frozen?
  end

  # Deferred accepts are on for the listeners a server binds, as in Unicorn
  # (a connection accepted before its request would wait on the worker that
  # took it), and can be turned off.
  def test_a_servers_listeners_defer_accept_unless_told_not_to
    config = Herd::Server::Config.new
    assert_equal [Herd::Server::Listener::DEFER_ACCEPT], config.listeners.map(&:tcp_defer_accept)
    config.add_listener("127.0.0.1:0")
    config.add_listener("127.0.0.1:0", tcp_defer_accept: false)
    assert_equal [1, false], config.listeners.map(&:tcp_defer_accept)
    skip "TCP_DEFER_ACCEPT is Linux only" unless Socket.const_defined?(:TCP_DEFER_ACCEPT)

    @listener = Herd::Server::Listener.bind(config.listeners.first)
    assert_operator option(:TCP, :DEFER_ACCEPT), :>=, 1
  end

  def test_both_options_can_be_set
    skip "TCP_DEFER_ACCEPT is Linux only" unless Socket.const_defined?(:TCP_DEFER_ACCEPT)

    bind(tcp_nodelay: false, tcp_defer_accept: 5)
    assert_equal 0, option(:TCP, :NODELAY)
    assert_operator option(:TCP, :DEFER_ACCEPT), :>=, 5 # the kernel rounds up to its retransmission steps
  end

  def test_accept_returns_the_socket_and_the_peers_ip_or_nil
    bind
    assert_nil @listener.accept
    client = TCPSocket.new("127.0.0.1", @listener.port)
    IO.select([@listener.socket], nil, nil, 5)
    socket, address = @listener.accept
    assert_kind_of BasicSocket, socket
    assert_equal "127.0.0.1", address
  ensure
    client&.close
    socket&.close
  end

  def test_a_unix_listener_accepts_with_a_loopback_peer_and_closing_it_frees_the_path
    Dir.mktmpdir do |dir|
      path = File.join(dir, "herd.sock")
      @listener = Herd::Server::Listener.bind(Spec.new(address: "unix:#{path}").validate!)
      assert @listener.unix?
      client = UNIXSocket.new(path)
      IO.select([@listener.socket], nil, nil, 5)
      socket, address = @listener.accept
      assert_equal "127.0.0.1", address
      client.write("ping")
      assert_equal "ping", socket.readpartial(4)
      @listener.close
      assert @listener.socket.closed?
      refute File.exist?(path)
    ensure
      client&.close
      socket&.close
    end
  end

  # Socket#accept_nonblock would also make an Addrinfo per connection
  # (2 KiB of C memory left in the worker until its next GC).
  def test_accepting_makes_no_addrinfo
    bind
    client = TCPSocket.new("127.0.0.1", @listener.port)
    IO.select([@listener.socket], nil, nil, 5)
    GC.disable
    before = ObjectSpace.each_object(Addrinfo).count
    socket, address = @listener.accept
    assert_equal before, ObjectSpace.each_object(Addrinfo).count
    assert_equal "127.0.0.1", address
  ensure
    GC.enable
    client&.close
    socket&.close
  end

  # A port alone means every interface, as in Unicorn and Puma: `listen 8080`
  # in a container must be reachable through `docker run -p 8080:8080`.
  def test_a_port_alone_listens_on_every_interface_and_the_log_says_who_can_connect
    bind
    assert_equal [:tcp, "0.0.0.0", 8080], Spec.new(address: "8080").parse
    assert_equal [:tcp, "127.0.0.1", 8080], Spec.new(address: "localhost:8080").parse
    assert_equal "0.0.0.0:8080", Herd::Server::Config::DEFAULT_LISTEN
    everywhere = Herd::Server::Listener.bind(Spec.new(address: "0").validate!)
    assert_equal "0.0.0.0", everywhere.socket.local_address.ip_address
    assert_equal " (every interface)", everywhere.reach
    assert_match(/\A \(loopback only: unreachable from other hosts and through a container's published port\)\z/, @listener.reach)
  ensure
    everywhere&.close
  end

  def test_bad_options_are_config_errors
    {
      {backlog: 0} => /backlog must be an Integer > 0/,
      {tcp_defer_accept: -1} => /tcp_defer_accept must be false or seconds > 0/,
      {tcp_defer_accept: "yes"} => /tcp_defer_accept/
    }.each do |options, message|
      error = assert_raises(Herd::ConfigError) { Spec.new(address: "127.0.0.1:0", **options).validate! }
      assert_match message, error.message
    end
    assert_raises(Herd::ConfigError) { Spec.new(address: "nowhere").validate! }
  end
end

# The monitor never runs the HTTP layer or the app: it must not load them
# (bench/cow counts its memory).
class MonitorFootprintTest < Herd::Test
  def test_the_serve_command_loads_neither_rack_nor_the_http_layer_nor_the_pool
    out, err, status = ruby_run(<<~RUBY)
      require "herd/cli"
      require "herd/cli/serve"
      config = Herd::Server::Config.new
      config.rackup = #{File.join(ROOT, "examples/demo/config.ru").inspect}
      config.validate!
      puts $LOADED_FEATURES.grep(%r{/rack/|/rack\\.rb|herd/http/|herd/pool})
    RUBY
    assert status.success?, err
    assert_equal ["herd/http/options.rb"], out.lines.map { |path| path.strip[%r{herd/http/.*}] }.compact.sort
    refute_match(/rack|pool/, out.gsub(ROOT, "")) # the checkout's own path may say either (a worktree named wt-pool)
  end
end
