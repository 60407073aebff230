# frozen_string_literal: true

require_relative "../errors"
require_relative "../pid"

module Herd
  module Cluster
    # The monitor's pid in a file, for scripts and for logrotate's
    # `kill -USR1 $(cat ...)`: one server, never every herd on the machine
    # as `pkill -f "herd monitor"` would.
    # @api private
    class Pidfile
      # Writes our pid (atomically: a reader never sees an empty file).
      # @raise [ConfigError] when the file names another live process
      # @return [Pidfile]
      def self.write(path)
        new(File.expand_path(path)).tap(&:write)
      end

      attr_reader :path

      def initialize(path)
        @path = path
      end

      def write
        holder = read
        if holder && holder != Process.pid && Pid.alive?(holder)
          raise ConfigError, "pidfile #{@path} names pid #{holder}, which is running: " \
            "stop that server first, or choose another pidfile"
        end
        temporary = "#{@path}.#{Process.pid}.tmp"
        File.write(temporary, "#{Process.pid}\n")
        File.rename(temporary, @path)
      rescue SystemCallError => e
        raise ConfigError, "cannot write pidfile #{@path}: #{e.message}"
      end

      # Removes the file unless another process took it over meanwhile.
      def remove
        File.delete(@path) if read == Process.pid
      rescue SystemCallError
        nil
      end

      private

      def read
        Integer(File.read(@path).strip, exception: false)
      rescue Errno::ENOENT
        nil
      end
    end
  end
end
