# frozen_string_literal: true

require "socket"
require "io/nonblock"

module Herd
  module Server
    # A listening socket: TCP (IPv4 or IPv6) or a UNIX socket, bound by the
    # monitor (or inherited from systemd) and shared by every worker.
    # @api private
    class Listener
      DEFAULT_BACKLOG = 1024
      # TCP_DEFER_ACCEPT seconds of a listener that does not say (see .tune_tcp).
      DEFER_ACCEPT = 1
      # Where a port given without a host listens: every IPv4 interface.
      ANY_HOST = "0.0.0.0"

      # What `listen` in the config or `--listen` on the command line says:
      # "host:port", "[v6]:port", "port", or "unix:/path". A port alone
      # binds every IPv4 interface, as in Unicorn and Puma: a config copied
      # from them means the same here, and a container's published port
      # reaches the server (docs/CONFIGURATION.md, "Which interfaces").
      Spec = Struct.new(:address, :backlog, :reuseport, :umask, :tcp_nodelay, :tcp_defer_accept, keyword_init: true) do
        # @raise [ConfigError] for options that make no sense
        def validate!
          parse
          unless backlog.nil? || positive_integer?(backlog)
            raise ConfigError, "listen #{address}: backlog must be an Integer > 0, got #{backlog.inspect}"
          end
          unless [nil, false].include?(tcp_defer_accept) || positive_integer?(tcp_defer_accept)
            raise ConfigError, "listen #{address}: tcp_defer_accept must be false or seconds > 0, " \
              "got #{tcp_defer_accept.inspect}"
          end
          self
        end

        private

        def positive_integer?(value)
          value.is_a?(Integer) && value.positive?
        end

        public

        # @return [Array(Symbol, String, Integer)] [:tcp, host, port] or [:unix, path, nil]
        def parse
          text = address.to_s
          return [:unix, text.delete_prefix("unix:"), nil] if text.start_with?("unix:")

          host, port = if (match = text.match(/\A\[(?<host>[^\]]+)\]:(?<port>\d+)\z/))
            [match[:host], match[:port]]
          elsif text.match?(/\A\d+\z/)
            [ANY_HOST, text]
          else
            text.split(":", 2).then { |h, p| [h, p] }
          end
          unless port&.match?(/\A\d+\z/) && !host.to_s.empty?
            raise ConfigError, "listen #{text.inspect}: expected host:port, [ipv6]:port, port or unix:/path"
          end

          [:tcp, (host == "localhost") ? "127.0.0.1" : host, Integer(port, 10)]
        end
      end

      # @return [Socket]
      attr_reader :socket

      # Binds the spec.
      # @raise [ConfigError] when the address cannot be bound, saying why
      def self.bind(spec)
        kind, host_or_path, port = spec.parse
        socket = (kind == :unix) ? bind_unix(host_or_path, spec) : bind_tcp(host_or_path, port, spec)
        new(socket)
      rescue SocketError, SystemCallError => e
        raise ConfigError, "cannot listen on #{spec.address}: #{e.message}"
      end

      def self.bind_tcp(host, port, spec)
        addrinfo = Addrinfo.tcp(host, port)
        socket = Socket.new(addrinfo.afamily, :STREAM)
        socket.setsockopt(:SOCKET, :REUSEADDR, true)
        socket.setsockopt(:SOCKET, :REUSEPORT, true) if spec.reuseport
        socket.setsockopt(:IPV6, :V6ONLY, true) if addrinfo.ipv6?
        tune_tcp(socket, spec)
        socket.bind(addrinfo)
        socket.listen(spec.backlog || DEFAULT_BACKLOG)
        socket
      end

      # Accepted sockets inherit both options from the listener on Linux.
      # TCP_DEFER_ACCEPT (on by default, as in Unicorn and Pitchfork):
      # accept(2) returns once the request's first bytes are there. A
      # connection accepted before them is held by the worker that took it
      # (PendingConnections), and waits on that worker while it serves
      # others or is off the CPU, which raised hello world's p99 under wrk
      # (docs/CONFIGURATION.md, `listen ..., tcp_defer_accept:`).
      def self.tune_tcp(socket, spec)
        socket.setsockopt(:TCP, :NODELAY, true) unless spec.tcp_nodelay == false
        seconds = spec.tcp_defer_accept
        socket.setsockopt(:TCP, :DEFER_ACCEPT, seconds) if seconds && Socket.const_defined?(:TCP_DEFER_ACCEPT)
      end

      def self.bind_unix(path, spec)
        remove_stale_socket(path)
        socket = Socket.new(:UNIX, :STREAM)
        previous = File.umask(spec.umask) if spec.umask
        begin
          socket.bind(Addrinfo.unix(path))
        ensure
          File.umask(previous) if previous
        end
        socket.listen(spec.backlog || DEFAULT_BACKLOG)
        socket
      end

      # A socket file left by a dead server would make bind fail; one that a
      # live server still answers on must not be stolen.
      def self.remove_stale_socket(path)
        return unless File.socket?(path)

        UNIXSocket.new(path).close
        raise Errno::EADDRINUSE, "#{path} (another server answers there)"
      rescue Errno::ECONNREFUSED, Errno::ENOENT
        File.unlink(path) if File.socket?(path)
      end

      # REMOTE_ADDR of a client on a UNIX socket, as for one on loopback.
      LOCAL_PEER = "127.0.0.1"

      # Wraps an inherited descriptor (systemd socket activation).
      def self.inherit(fd)
        new(Socket.for_fd(fd).tap { |socket| socket.autoclose = true })
      end

      def initialize(socket)
        @socket = socket
        # Asked for on every request (SERVER_NAME, SERVER_PORT): once, not a
        # getsockname per request.
        address = socket.local_address
        @unix = address.unix?
        @host = @unix ? "localhost" : -address.ip_address # frozen: every env shares it
        @port = @unix ? 0 : address.ip_port
        @port_string = @port.to_s.freeze
        @acceptor = acceptor_for(socket)
      end

      # @return [String] for SERVER_NAME
      attr_reader :host

      # @return [Integer] for SERVER_PORT
      attr_reader :port

      # @return [String] SERVER_PORT as the Rack env has it, made once
      attr_reader :port_string

      # In a worker, before its first accept: a TCP listener takes its
      # connections through `c_accept` ({TCPAccept}, herd's C extension),
      # which saves the fcntl Ruby's accept_nonblock makes on every call
      # and the getpeername for REMOTE_ADDR. The listener is made
      # non-blocking for it, as Ruby's accept_nonblock makes it on its first
      # call.
      # @param c_accept [#accept, nil] nil: Ruby's accept_nonblock
      def accept_with(c_accept)
        return if @unix || c_accept.nil?

        @socket.nonblock = true
        @fileno = @socket.fileno
        @c_accept = c_accept
      end

      # @return [Array(BasicSocket, String), nil] the client and its address
      #   for REMOTE_ADDR ("127.0.0.1" on a UNIX socket; through Ruby's
      #   accept, nil if the client is already gone, as getpeername then
      #   fails; through {TCPAccept}, the address accept4 gave); nil when
      #   another worker won the race
      def accept
        return @c_accept.accept(@fileno, TCPSocket) if @c_accept

        client = @acceptor.accept_nonblock(exception: false)
        (client == :wait_readable) ? nil : [client, remote_addr(client)]
      rescue Errno::ECONNABORTED, Errno::EPROTO, Errno::EINTR
        nil
      end

      # @return [Boolean]
      def unix?
        @unix
      end

      # @return [String] "http://127.0.0.1:8080" or "unix:/path"
      def to_s
        address = @socket.local_address
        return "unix:#{address.unix_path}" if address.unix?

        host = address.ipv6? ? "[#{address.ip_address}]" : address.ip_address
        "http://#{host}:#{address.ip_port}"
      end

      # Who can connect, for the boot log: a loopback listener is easy to
      # mistake for a public one (`docker run -p 8080:8080` reaches nothing).
      # @return [String] "" or " (...)"
      def reach
        address = @socket.local_address
        return "" if address.unix?
        if address.ipv4_loopback? || address.ipv6_loopback?
          return " (loopback only: unreachable from other hosts and through a container's published port)"
        end
        return " (every interface)" if ["0.0.0.0", "::"].include?(address.ip_address)

        ""
      end

      # @return [void]
      def close
        path = @socket.local_address.unix_path if unix?
        @socket.close unless @socket.closed?
        File.unlink(path) if path && File.socket?(path)
      rescue SystemCallError, IOError
        nil
      end

      private

      # Socket#accept_nonblock also returns the peer's Addrinfo, C memory
      # per connection that stays in the worker until its next GC
      # (docs/COPY_ON_WRITE.md, "Where the holes fall"). TCPServer's
      # and UNIXServer's return the socket alone. The wrapper shares the
      # listener's descriptor and never closes it: the Socket owns it.
      def acceptor_for(socket)
        acceptor = (@unix ? UNIXServer : TCPServer).for_fd(socket.fileno)
        acceptor.autoclose = false
        acceptor
      end

      def remote_addr(client)
        return LOCAL_PEER if @unix

        Socket.unpack_sockaddr_in(client.getpeername)[1]
      rescue SystemCallError, ArgumentError
        nil
      end
    end
  end
end
