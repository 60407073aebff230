# frozen_string_literal: true

require "test_helper"
require "socket"
require "herd/descriptor_close"

# IO#close marks an IO closed before close(2) and checks for interrupts in
# between: a trap that raises there (Ctrl-C in Herd.map) left the socket
# open while the IO said it was closed.
class DescriptorCloseTest < Herd::Test
  # Does what IO#close does when a trap raises at its interrupt check:
  # closed as far as Ruby can tell, the descriptor still open.
  class InterruptedIO
    def initialize(io)
      @io = io
      @closed = false
    end

    def fileno = @io.fileno

    def closed? = @closed

    def close
      @io.autoclose = false # the descriptor outlives this IO, as it did
      @closed = true
      raise Interrupt
    end
  end

  def test_a_descriptor_left_open_by_an_interrupted_close_is_closed_and_the_interrupt_raised
    skip "needs /proc/self/fd" unless File.directory?(Herd::DescriptorClose::FD_DIR)
    a, b = UNIXSocket.pair
    fd = a.fileno
    assert_raises(Interrupt) { Herd::DescriptorClose.close(InterruptedIO.new(a)) }
    refute File.exist?("/proc/self/fd/#{fd}"), "descriptor #{fd} left open"
  ensure
    b&.close
  end

  def test_a_descriptor_that_now_names_something_else_is_left_alone
    skip "needs /proc/self/fd" unless File.directory?(Herd::DescriptorClose::FD_DIR)
    a, b = UNIXSocket.pair
    fd = a.fileno
    io = InterruptedIO.new(a)
    target = Herd::DescriptorClose.target(fd)
    # the look before the close sees the socket, the one after something else
    calls = 0
    Herd::DescriptorClose.stub(:target, ->(_) { ((calls += 1) == 1) ? target : "pipe:[1]" }) do
      assert_raises(Interrupt) { Herd::DescriptorClose.close(io) }
    end
    assert File.exist?("/proc/self/fd/#{fd}"), "someone else's descriptor #{fd} was closed"
  ensure
    IO.for_fd(fd, autoclose: true).close if fd && File.exist?("/proc/self/fd/#{fd}")
    b&.close
  end

  def test_an_ordinary_close_closes
    a, b = UNIXSocket.pair
    Herd::DescriptorClose.close(a)
    assert a.closed?
    Herd::DescriptorClose.close(a) # twice is fine
  ensure
    b&.close
  end
end
