# frozen_string_literal: true

require "test_helper"
require "herd/http"
require "stringio"

module Herd
  # EmptyInput must answer like an empty StringIO, the rack.input it stands for.
  class HTTPEmptyInputTest < Test
    def both
      [HTTP::EmptyInput::INSTANCE, StringIO.new("".b)]
    end

    def test_reads_like_an_empty_stringio
      both.each do |input|
        name = input.class.name
        assert_equal "", input.read, name
        assert_equal Encoding::BINARY, input.read.encoding, name
        assert_nil input.read(10), name
        assert_equal "", input.read(0), name
        buffer = +"old"
        assert_nil input.read(10, buffer), name
        assert_equal "", buffer, name
        assert_nil input.gets, name
        assert_equal 0, input.rewind, name
        assert_equal 0, input.size, name
        assert input.eof?, name
        yielded = []
        input.each { |line| yielded << line }
        assert_empty yielded, name
        assert_raises(ArgumentError, name) { input.read(-1) }
      end
    end

    def test_closing_it_does_not_break_the_next_request
      input = HTTP::EmptyInput::INSTANCE
      input.close
      refute input.closed?
      assert_equal "", input.read
    end
  end
end
