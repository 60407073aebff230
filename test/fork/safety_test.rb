# frozen_string_literal: true

require "test_helper"

class ForkSafetyTest < Herd::Test
  def test_no_longer_fork_safe_is_sticky_and_told_once
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      told = []
      Herd::ForkSafety.on_unsafe { |reason| told << reason }
      before = Herd.fork_safe?
      Herd.no_longer_fork_safe!("grpc channel open")
      Herd.no_longer_fork_safe!("again")
      p [before, Herd.fork_safe?, told, Herd::ForkSafety.reason]
    RUBY
    assert status.success?, err
    assert_equal '[true, false, ["grpc channel open"], "grpc channel open"]', out.chomp
  end

  def test_close_all_ios_keeps_standard_streams_and_kept_ios
    out, err, status = ruby_run(<<~RUBY)
      require "herd"
      require "socket"
      kept_r, kept_w = IO.pipe
      Herd.keep_io(kept_r)
      gone_r, gone_w = IO.pipe
      server = TCPServer.new("127.0.0.1", 0)
      closed = Herd.close_all_ios!
      p [kept_r.closed?, kept_w.closed?, gone_r.closed?, gone_w.closed?, server.closed?, $stdout.closed?, closed >= 4]
    RUBY
    assert status.success?, err
    assert_equal "[false, true, true, true, true, false, true]", out.chomp
  end

  def test_closing_an_inherited_socket_in_a_child_does_not_end_the_peers_connection
    server = TCPServer.new("127.0.0.1", 0)
    client = TCPSocket.new("127.0.0.1", server.addr[1])
    accepted = server.accept
    pid = fork do
      Herd.close_all_ios!
      exit!(0)
    end
    Process.wait(pid)
    accepted.write("still here")
    assert_equal "still here", client.readpartial(100)
    assert_nil (client.read_nonblock(1, exception: false) == :wait_readable) ? nil : :eof
  ensure
    [server, client, accepted].each { |io| io&.close }
  end

  def test_prevent_fork_holds_forks_off_until_the_block_ends
    order = Queue.new
    inside = Queue.new
    holder = Thread.new do
      Herd.prevent_fork do
        inside << true
        sleep 0.2
        order << :block_done
      end
    end
    inside.pop
    pid = fork { exit!(0) }
    order << :forked
    Process.wait(pid)
    holder.join
    assert_equal [:block_done, :forked], [order.pop, order.pop]
  end

  def test_fork_inside_prevent_fork_is_an_error
    error = assert_raises(Herd::Error) { Herd.prevent_fork { fork { exit!(0) } } }
    assert_match(/fork called inside Herd.prevent_fork/, error.message)
  end
end
