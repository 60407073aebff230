# frozen_string_literal: true

module Herd
  module HTTP
    # rack.input of a request without a body: behaves like an empty, binary,
    # rewindable StringIO, and is one shared object instead of two new ones
    # per request (most requests are GETs). Closing it is a no-op, so an
    # application that closes its input cannot break the next request.
    class EmptyInput
      INSTANCE = new

      # @return [nil] at end of input
      def gets(*)
        nil
      end

      # Yields nothing.
      # @return [self]
      def each
        self
      end

      # IO#read semantics at end of input: "" without a length (or a length of
      # 0), nil with a positive length; a given buffer is emptied.
      # @param length [Integer, nil]
      # @param buffer [String, nil]
      # @return [String, nil]
      def read(length = nil, buffer = nil)
        raise ArgumentError, "negative length #{length} given" if length&.negative?

        buffer&.clear
        return nil if length&.positive?

        buffer || String.new(encoding: Encoding::BINARY)
      end

      # @return [0]
      def rewind
        0
      end

      # @return [0]
      def size
        0
      end

      # @return [true]
      def eof?
        true
      end

      # @return [nil]
      def close
        nil
      end

      # @return [false] never closed (see the class comment)
      def closed?
        false
      end

      # @return [true]
      def binmode?
        true
      end

      # @return [Encoding] ASCII-8BIT, as every rack.input
      def external_encoding
        Encoding::BINARY
      end
    end
  end
end
