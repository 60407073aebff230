# frozen_string_literal: true

require "stringio"
require "tempfile"

module Herd
  module HTTP
    # Where a request body is collected before the application runs, and what
    # becomes rack.input: a StringIO while the body is small, an unlinked
    # Tempfile once it passes the threshold (so a large upload costs disk, not
    # the worker's memory). Both are binary and rewindable.
    class BodySpool
      # @return [StringIO] an empty rack.input for requests without a body
      def self.empty
        StringIO.new(String.new(encoding: Encoding::BINARY))
      end

      # @param threshold [Integer] bytes kept in memory at most
      # @param expected [Integer, nil] the size announced (Content-Length), to go to disk at once
      def initialize(threshold, expected = nil)
        @threshold = threshold
        @size = 0
        @io = (expected && expected > threshold) ? tempfile : StringIO.new(String.new(encoding: Encoding::BINARY))
      end

      # @return [Integer] bytes collected
      attr_reader :size

      # @param data [String]
      def <<(data)
        @size += data.bytesize
        spill if @size > @threshold && @io.is_a?(StringIO)
        @io.write(data)
        self
      end

      # @return [StringIO, File] the body, rewound
      def to_input
        @io.rewind
        @io
      end

      # Closes (and so frees) the body after an error.
      def close
        @io.close
      end

      private

      def spill
        file = tempfile
        file.write(@io.string)
        @io = file
      end

      # Unlinked at once: the file disappears even if the worker is killed.
      def tempfile
        file = Tempfile.create("herd-body")
        File.unlink(file.path)
        file.binmode
        file
      end
    end
  end
end
