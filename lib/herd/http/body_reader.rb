# frozen_string_literal: true

require_relative "grammar"
require_relative "errors"
require_relative "body_spool"

module Herd
  module HTTP
    # Reads a whole request body (Content-Length or chunked) into a
    # {BodySpool} before the application runs, enforcing max_body (413) and the
    # chunked grammar (400).
    #
    # Reading the body first means the application always gets a complete,
    # rewindable rack.input and never waits on a slow client itself; a
    # buffering proxy in front makes the wait short anyway.
    class BodyReader
      include Grammar

      # chunk-size [ chunk-ext ] (RFC 9112 §7.1.1): at most 16 hex digits (no
      # 64-bit overflow anywhere down the line), extensions as name[=value].
      CHUNK_SIZE_LINE = /\A(\h{1,16})(?:[ \t]*;[ \t]*[#{TCHAR}]+(?:[ \t]*=[ \t]*(?:[#{TCHAR}]+|"(?:[\t \x21\x23-\x5B\x5D-\x7E\x80-\xFF]|\\[\t \x21-\x7E\x80-\xFF])*"))?)*\z/n
      MAX_CHUNK_LINE = 4096

      # @param reader [SocketReader]
      # @param parser [Parser] parses trailers like headers
      # @param options [Options]
      def initialize(reader, parser, options)
        @reader = reader
        @parser = parser
        @options = options
      end

      # Refuses a Content-Length above max_body before anything is read (and
      # before 100 Continue invites the client to send it).
      # @raise [RequestError] 413
      def check_length(request)
        length = request.content_length
        return unless length && @options.max_body && length > @options.max_body

        raise RequestError.new(413, "Content-Length #{length} above max_body #{@options.max_body}")
      end

      # @param request [Request]
      # @return [Array(IO, Integer, Hash, nil)] rack.input (rewound), its size, and the trailers
      #   (env-keyed) of a chunked body
      # @raise [RequestError] 400, 408, 413, 431
      def read(request)
        return [BodySpool.empty, 0, nil] unless request.body?

        spool = BodySpool.new(@options.body_spool_threshold, request.content_length)
        trailers = nil
        if request.chunked
          trailers = read_chunked(spool)
        else
          @reader.read_exactly(request.content_length) { |data| spool << data }
        end
        [spool.to_input, spool.size, trailers]
      rescue Exception # rubocop:disable Lint/RescueException -- close the Tempfile whatever happens, then re-raise
        spool&.close
        raise
      end

      private

      # @return [Hash, nil] the trailers
      def read_chunked(spool)
        loop do
          line = @reader.read_line(MAX_CHUNK_LINE)
          size_match = CHUNK_SIZE_LINE.match(line) or
            raise RequestError.new(400, "invalid chunk size line #{line[0, 64].inspect}")
          size = size_match[1].to_i(16)
          break if size.zero?

          if @options.max_body && spool.size + size > @options.max_body
            raise RequestError.new(413, "chunked body above max_body #{@options.max_body}")
          end
          @reader.read_exactly(size) { |data| spool << data }
          @reader.read_crlf
        end
        section = @reader.read_trailer_section(@options.max_header_bytes)
        section && @parser.parse_trailers(section)
      end
    end
  end
end
