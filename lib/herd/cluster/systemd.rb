# frozen_string_literal: true

require "socket"

module Herd
  module Cluster
    # systemd integration without libsystemd: socket activation (LISTEN_FDS)
    # and readiness notification (sd_notify over NOTIFY_SOCKET).
    # @api private
    module Systemd
      FIRST_FD = 3

      class << self
        # Descriptors passed by systemd to this very process (LISTEN_PID must
        # be ours), removed from the environment so children don't see them.
        # @return [Array<Integer>]
        def listen_fds(env = ENV)
          count = env["LISTEN_FDS"].to_i
          pid = env["LISTEN_PID"].to_i
          return [] unless count.positive? && pid == Process.pid

          %w[LISTEN_FDS LISTEN_PID LISTEN_FDNAMES].each { |key| env.delete(key) }
          (FIRST_FD...(FIRST_FD + count)).to_a
        end

        # Sends "READY=1", "STOPPING=1", "STATUS=..." to systemd; a no-op
        # without NOTIFY_SOCKET.
        # @return [Boolean] whether it was sent
        def notify(state, env = ENV)
          path = env["NOTIFY_SOCKET"]
          return false if path.nil? || path.empty?

          path = "\0#{path[1..]}" if path.start_with?("@") # abstract namespace
          socket = Socket.new(:UNIX, :DGRAM)
          socket.send(state, 0, Socket.sockaddr_un(path))
          true
        rescue SystemCallError, ArgumentError
          false
        ensure
          socket&.close
        end
      end
    end
  end
end
