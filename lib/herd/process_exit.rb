# frozen_string_literal: true

require_relative "env_switch"

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

    # Turns the fast finish off: Ruby's whole exit after the at_exit hooks.
    FAST_FINISH_ENV = "HERD_FAST_EXIT"

    # A graceful end (a stop asked for, a worker retired or recycled): Ruby's
    # own exit, so at_exit hooks run, as when a Unicorn, Puma or Pitchfork
    # worker exits; then the fast finish (#arm_fast_finish).
    # @param status [Integer]
    def graceful(status = 0)
      flush_standard_streams
      arm_fast_finish(status)
      exit(status)
    end

    # After the at_exit hooks, Ruby's exit walks every heap page to free each
    # object that holds C memory, and that writes to the pages: a forked
    # process exiting while its siblings live copies them, a large part of the
    # heap for a Rails worker or mold, and during a refork or a reload, while
    # the old generation retires, those copies add up to the server's peak
    # (docs/SIGNALS.md, "How processes end"; docs/HEAP_STEPS.md, "The fast
    # exit"). So once the at_exit hooks have run, the process flushes every IO
    # still buffered, closes and unlinks its open Tempfiles (what their
    # finalizers would do), and ends with exit!.
    #
    # It relies on Ruby running object finalizers after every at_exit hook
    # (true of every Ruby since 1.8): the finish is a finalizer, so whatever
    # order the app registered its hooks in, they all run first. Ruby runs
    # the finalizers left at exit in rounds, until none is left; the finish
    # steps aside for one round (it registers itself again), so the app's
    # own finalizers run too. One difference remains: an at_exit hook that
    # calls exit(n) does not change the status (a finalizer cannot see it).
    # HERD_FAST_EXIT=0 turns it off.
    # @param status [Integer] the exit status
    # @return [Boolean] whether it is armed
    def arm_fast_finish(status)
      return false if EnvSwitch.off?(ENV[FAST_FINISH_ENV])

      @fast_status = status
      @fast_rounds_left ||= begin
        @fast_anchor = Object.new
        ObjectSpace.define_finalizer(@fast_anchor, FINISH)
        1
      end
      true
    end

    # @api private
    # The finalizer: run at exit, after the at_exit hooks.
    FINISH = proc { ProcessExit.finish_fast }

    # @api private
    def finish_fast
      if @fast_rounds_left.to_i.positive?
        @fast_rounds_left -= 1
        @fast_anchor = Object.new # kept: a GC must not run the finish early
        ObjectSpace.define_finalizer(@fast_anchor, FINISH)
        return
      end
      close_tempfiles
      flush_all_ios
      exit!(@fast_status || 0)
    rescue ArgumentError, RuntimeError # a Ruby that refuses finalizers now: its own exit goes on
      nil
    end

    # An immediate end (TERM, INT, a crash, an orphan): no at_exit hook (the
    # parent's, in a pool worker, must not run once per worker), but stdout
    # and stderr are flushed first.
    # @param status [Integer]
    def now(status = 0)
      flush_standard_streams
      exit!(status)
    end

    # Tempfiles the app left open: unlinked, as their finalizers would.
    def close_tempfiles
      return unless defined?(::Tempfile)

      ObjectSpace.each_object(::Tempfile) do |file|
        file.close!
      rescue IOError, SystemCallError
        nil
      end
    end

    # Every IO with buffered writes, as Ruby's own exit would flush them.
    def flush_all_ios
      flush_standard_streams
      ObjectSpace.each_object(IO) do |io|
        io.flush unless io.closed?
      rescue IOError, SystemCallError, ThreadError
        nil
      end
    end

    # Flushes $stdout, $stderr and the STDOUT/STDERR constants when an app
    # replaced the globals. Never raises: in a trap handler the main thread
    # may hold the stream's lock (ThreadError), and a closed pipe must not
    # stop the exit.
    def flush_standard_streams
      # Both: an app may have replaced the globals.
      [$stdout, $stderr, STDOUT, STDERR].uniq.each do |io| # rubocop:disable Style/GlobalStdStream
        io.flush if io.respond_to?(:flush)
      rescue IOError, SystemCallError, ThreadError
        nil
      end
    end
  end
end
