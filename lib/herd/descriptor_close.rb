# frozen_string_literal: true

module Herd
  # Closes an IO so that a signal cannot leave its descriptor open.
  #
  # Ruby's IO#close marks the IO closed, then checks for interrupts before
  # it calls close(2) on a writable descriptor. A trap handler that raises
  # at that check (Ctrl-C: Ruby's default INT handler raises Interrupt, and
  # Thread.handle_interrupt does not defer traps) leaves the descriptor
  # open, while the IO says it is closed, so no retry closes it. Rare, but
  # a burst of Ctrl-C in Herd.map is enough (docs/POOL.md, "Failure is
  # explicit, never a hang").
  #
  # After a raise, the descriptor is closed again only if it still names
  # what the IO held (/proc/self/fd shows the same socket or file): the
  # trap handler may have opened something that got the same number.
  # Off Linux (no /proc/self/fd) the leak stays possible.
  # @api private
  module DescriptorClose
    FD_DIR = "/proc/self/fd"

    module_function

    # @param io [IO]
    # @return [void]
    def close(io)
      return if io.closed?

      fd = io.fileno
      target = target(fd)
      begin
        io.close
      rescue Exception # rubocop:disable Lint/RescueException -- close what the interrupt left open, then re-raise
        close_left_open(fd, target) if io.closed?
        raise
      end
    end

    # @return [String, nil] what the descriptor names (socket:[INODE], a path)
    def target(fd)
      File.readlink("#{FD_DIR}/#{fd}")
    rescue SystemCallError
      nil
    end

    # The first exception is re-raised by #close whatever happens here; a
    # second interrupt during this close gets one more try.
    def close_left_open(fd, expected)
      2.times do
        return unless expected && target(fd) == expected

        begin
          return IO.for_fd(fd, autoclose: true).close
        rescue Exception # rubocop:disable Lint/RescueException -- the same hazard again
          next
        end
      end
    end
  end
end
