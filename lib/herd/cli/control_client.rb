# frozen_string_literal: true

require "json"
require "socket"
require_relative "../errors"
require_relative "../memory/process_tree"

module Herd
  class CLI
    # Reads a running server's control endpoint (`control_listen`): what
    # `herd top` shows.
    # @api private
    class ControlClient
      TIMEOUT = 5

      # The address a monitor serves its control endpoint on, from its process
      # title ("herd monitor control=unix:/path"), for `herd top --pidfile`.
      # @param pidfile [String]
      # @return [String]
      # @raise [ControlError] when the pidfile, the process or the endpoint is missing
      def self.address_from_pidfile(pidfile)
        pid = Integer(File.read(pidfile).strip, 10)
        title = Memory::ProcessTree.new.title(pid)
        raise ControlError, "pid #{pid} (from #{pidfile}) is not running; is the server up?" unless title
        unless title.start_with?("herd monitor")
          raise ControlError, "pid #{pid} is #{title.inspect}, not a herd monitor"
        end

        title[/ control=(\S+)/, 1] or
          raise ControlError, "herd monitor #{pid} has no control endpoint: " \
            "add `control_listen \"unix:/path/herd.sock\"` to its config"
      rescue Errno::ENOENT, Errno::EACCES => e
        raise ControlError, "cannot read pidfile #{pidfile}: #{e.message}"
      rescue ArgumentError
        raise ControlError, "#{pidfile} does not hold a pid"
      end

      # @param address [String] "unix:/path", "host:port", "http://host:port" or a port
      def initialize(address)
        @address = address.to_s.delete_prefix("http://").chomp("/")
      end

      # @return [Hash] the /stats document
      # @raise [ControlError]
      def stats
        JSON.parse(get("/stats"))
      rescue JSON::ParserError => e
        raise ControlError, "#{@address}/stats is not herd's stats (#{e.message[0, 80]})"
      end

      # @param path [String]
      # @return [String] the body of a 200 answer
      # @raise [ControlError]
      def get(path)
        socket = connect
        socket.write("GET #{path} HTTP/1.1\r\nHost: herd\r\nConnection: close\r\n\r\n")
        raise ControlError, "#{@address} did not answer within #{TIMEOUT}s" unless socket.wait_readable(TIMEOUT)

        head, body = socket.read.split("\r\n\r\n", 2)
        status = head.to_s[/\AHTTP\/1\.[01] (\d{3})/, 1]
        unless status == "200"
          raise ControlError, "#{@address}#{path} answered #{head.to_s.lines.first.to_s.strip.inspect}"
        end

        body.to_s
      rescue SystemCallError, IOError, SocketError => e
        raise ControlError, "cannot reach herd's control endpoint at #{@address}: #{e.message} (is control_listen set?)"
      ensure
        socket&.close
      end

      private

      def connect
        return UNIXSocket.new(@address.delete_prefix("unix:")) if @address.start_with?("unix:")

        host, port = if @address.match?(/\A\d+\z/)
          ["127.0.0.1", @address]
        else
          @address.sub(/\A\[(.+)\]/, '\1').rpartition(":").values_at(0, 2)
        end
        if host.to_s.empty? || !port.match?(/\A\d+\z/)
          raise ControlError, "control address #{@address.inspect}: expected unix:/path or host:port"
        end

        Socket.tcp(host, Integer(port, 10), connect_timeout: TIMEOUT)
      end
    end
  end
end
