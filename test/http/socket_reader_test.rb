# frozen_string_literal: true

require "test_helper"
require "socket"
require "objspace"
require "herd/http/socket_reader"

module Herd
  # SocketReader reads into one buffer per thread and copies out what it
  # read: a worker must not allocate a 16 KiB string per request.
  class HTTPSocketReaderTest < Test
    Reader = HTTP::SocketReader
    HEAD = "GET /a HTTP/1.1\r\nHost: example.com\r\n\r\n"

    def setup
      @client, @server = UNIXSocket.pair
    end

    def teardown
      [@client, @server].each { |io| io.close unless io.closed? }
    end

    def test_every_reader_of_a_thread_reads_into_the_same_buffer
      scratch = Reader.scratch
      2.times do
        @client.write(HEAD)
        assert_equal HEAD, Reader.new(@server, 5).read_head(8192, 65536)
        assert_same scratch, Reader.scratch
      end
      assert_operator ObjectSpace.memsize_of(scratch), :>=, Reader::READ_SIZE, "its capacity is kept"
      refute_same scratch, Thread.new { Reader.scratch }.value, "a thread of its own"
    end

    def test_what_was_read_survives_the_next_read_into_the_buffer
      second = "GET /b HTTP/1.1\r\nHost: example.com\r\n\r\n"
      @client.write(HEAD + second)
      reader = Reader.new(@server, 5)
      assert_equal HEAD, reader.read_head(8192, 65536)
      @client.write("POST /c HTTP/1.1\r\nHost: x\r\n\r\n")
      other = Reader.new(@server, 5)
      assert_equal "POST /c HTTP/1.1\r\nHost: x\r\n\r\n", other.read_head(8192, 65536)
      assert_equal second, reader.read_head(8192, 65536), "the pipelined request was copied out of the buffer"
    end

    def test_a_head_arriving_in_pieces_is_put_together
      reader = Reader.new(@server, 5)
      @client.write("GET /a HTTP/1.1\r\n")
      thread = Thread.new { reader.read_head(8192, 65536) }
      Thread.pass until thread.status == "sleep" || !thread.alive?
      @client.write("Host: example.com\r\n\r\n")
      assert_equal HEAD, thread.value
    end

    # What a worker asks of a connection it holds: can read_head run now
    # without waiting?
    def test_head_decided_reads_without_waiting_until_the_head_is_there
      reader = Reader.new(@server, 5)
      refute reader.head_decided?(8192, 65536), "nothing sent yet"
      @client.write(HEAD)
      assert reader.head_decided?(8192, 65536)
      assert_equal HEAD, reader.read_head(8192, 65536)
    end

    def test_head_decided_a_byte_at_a_time
      reader = Reader.new(@server, 5)
      decided = HEAD.each_char.map do |byte|
        @client.write(byte)
        reader.head_decided?(8192, 65536)
      end
      assert_equal [false] * (HEAD.size - 1) + [true], decided
      assert_equal HEAD, reader.read_head(8192, 65536)
    end

    def test_head_decided_for_what_can_be_refused_already
      too_long = Reader.new(@server, 5)
      @client.write("GET /#{"a" * 100}")
      assert too_long.head_decided?(64, 65536)
      assert_equal 414, assert_raises(HTTP::RequestError) { too_long.read_head(64, 65536) }.status

      client, server = UNIXSocket.pair
      closed = Reader.new(server, 5)
      client.write("GET / HTTP/1.1\r\n")
      client.close
      refute closed.head_decided?(8192, 65536), "the bytes before the close"
      assert closed.head_decided?(8192, 65536), "the close"
      assert_equal 400, assert_raises(HTTP::RequestError) { closed.read_head(8192, 65536) }.status
    ensure
      server&.close
    end

    def test_an_expired_head_gets_408_at_once_with_the_reason
      reader = Reader.new(@server, 30)
      @client.write("GET / HTTP/1.1\r\n")
      refute reader.head_decided?(8192, 65536)
      reader.expire_head!("made room")
      error = assert_raises(HTTP::RequestError) { reader.read_head(8192, 65536) }
      assert_equal [408, "made room"], [error.status, error.message]
    end
  end
end
