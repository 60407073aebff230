# frozen_string_literal: true

require "fcntl"
require_relative "../errors"

module Herd
  module Cluster
    # The files a server writes its logs to, and USR1: reopen them after
    # logrotate renamed them.
    #
    # `stdout_path` / `stderr_path` point the monitor's stdout and stderr
    # (descriptors 1 and 2, so every child and every subprocess the app
    # starts) at files opened for append. Reopening follows Unicorn's
    # semantics, which logrotate configs copied from Unicorn or Pitchfork
    # expect: every process reopens its own descriptors (a child's are
    # copies of its parent's, so the monitor reopening changes nothing in a
    # worker), the monitor at once, the mold and the workers between
    # requests. What is reopened: the two configured streams, and every
    # File opened for append and written synchronously (a Rails log, an
    # access log) whose path now names another file or none.
    # @api private
    module LogFiles
      APPEND = File::WRONLY | File::APPEND

      module_function

      # In the monitor, before anything is forked.
      # @param stdout_path [String, nil]
      # @param stderr_path [String, nil]
      def redirect(stdout_path: nil, stderr_path: nil)
        @paths = {}
        {$stdout => [:stdout_path, stdout_path], $stderr => [:stderr_path, stderr_path]}.each do |io, (setting, path)|
          next unless path

          path = File.expand_path(path)
          begin
            io.reopen(path, "a")
          rescue SystemCallError => e
            raise ConfigError, "#{setting} #{path}: #{e.message.sub(/ @ \w+/, "")}; " \
              "create its directory or choose another path"
          end
          io.sync = true
          @paths[io] = path
        end
      end

      # Reopens every log file whose path was renamed or removed.
      # @return [Array<String>] the paths reopened
      def reopen
        candidates.filter_map do |io, path|
          next unless renamed?(io, path)

          reopen_one(io, path)
          path
        rescue IOError, SystemCallError
          nil # a file we cannot reopen keeps its old descriptor: nothing is lost
        end
      end

      # USR1 in a mold or a worker (the monitor logs its own).
      def reopen_and_log(log, role)
        reopened = reopen
        log.info(role, "reopened #{reopened.join(", ")}") unless reopened.empty?
      end

      # @return [Array<Array(IO, String)>]
      def candidates
        configured = (@paths || {}).to_a
        files = []
        ObjectSpace.each_object(File) do |file|
          files << [file, file.path] if log_file?(file) && configured.none? { |io, _| io.equal?(file) }
        end
        configured + files
      end

      def log_file?(file)
        !file.closed? && file.sync && file.path && (file.fcntl(Fcntl::F_GETFL) & APPEND) == APPEND && file.stat.file?
      rescue IOError, SystemCallError
        false
      end

      def renamed?(io, path)
        now = io.stat
        on_disk = File.stat(path)
        now.ino != on_disk.ino || now.dev != on_disk.dev
      rescue Errno::ENOENT
        true
      end

      # The new file keeps the old one's owner (logrotate's `create` may
      # make it root's while the server runs as another user).
      def reopen_one(io, path)
        before = io.stat
        io.flush
        io.reopen(path, "a")
        io.sync = true
        after = io.stat
        File.chown(before.uid, before.gid, path) if after.uid != before.uid || after.gid != before.gid
      rescue Errno::EPERM
        nil
      end
    end
  end
end
