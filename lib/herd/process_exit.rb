# frozen_string_literal: true

module Herd
  # How every process herd forks ends, so that nothing an app wrote is lost.
  #
  # `exit!` skips Ruby's exit: no at_exit hook runs and no IO buffer is
  # flushed. When stdout is a file or a pipe (systemd, docker, nohup) Ruby
  # buffers it, and a process ending with a bare `exit!` drops the lines it
  # had not flushed yet. Every exit path of a mold, a server worker or a pool
  # worker goes through one of the two methods below.
  # @api private
  module ProcessExit
    module_function

    # A graceful end (a stop asked for, a worker retired or recycled): Ruby's
    # own exit, so at_exit hooks run and every IO is flushed, as when a
    # Unicorn, Puma or Pitchfork worker exits.
    # @param status [Integer]
    def graceful(status = 0)
      flush_standard_streams
      exit(status)
    end

    # An immediate end (TERM, INT, a crash, an orphan): no at_exit hook (the
    # parent's, in a pool worker, must not run once per worker), but stdout
    # and stderr are flushed first.
    # @param status [Integer]
    def now(status = 0)
      flush_standard_streams
      exit!(status)
    end

    # Flushes $stdout, $stderr and the STDOUT/STDERR constants when an app
    # replaced the globals. Never raises: in a trap handler the main thread
    # may hold the stream's lock (ThreadError), and a closed pipe must not
    # stop the exit.
    def flush_standard_streams
      [$stdout, $stderr, STDOUT, STDERR].uniq.each do |io| # rubocop:disable Style/GlobalStdStream -- both: an app may have replaced the globals
        io.flush if io.respond_to?(:flush)
      rescue IOError, SystemCallError, ThreadError
        nil
      end
    end
  end
end
