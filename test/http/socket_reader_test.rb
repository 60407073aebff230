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
  end
end
