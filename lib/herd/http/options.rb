# frozen_string_literal: true

require_relative "../errors"

module Herd
  module HTTP
    # Limits and switches of the HTTP layer, validated once when built.
    #
    #   Herd::HTTP::Options.new(max_body: 10 * 1024 * 1024, read_timeout: 10)
    #
    # @!attribute [r] max_request_line
    #   @return [Integer] bytes of the request line (without CRLF); longer gets 414
    # @!attribute [r] max_header_count
    #   @return [Integer] header (and trailer) lines; more gets 431
    # @!attribute [r] max_header_bytes
    #   @return [Integer] bytes of all header lines together (and of the trailers); more gets 431
    # @!attribute [r] max_body
    #   @return [Integer, nil] bytes of a request body (decoded, for chunked); more gets 413; nil: no limit
    # @!attribute [r] body_spool_threshold
    #   @return [Integer] bodies up to this size stay in memory (StringIO), larger ones go to an unlinked Tempfile
    # @!attribute [r] read_timeout
    #   @return [Numeric] seconds a client has to send its whole head, and at most between two reads
    #     of its body; then 408
    # @!attribute [r] max_pending_heads
    #   @return [Integer] connections a `herd serve` worker holds while their request heads arrive
    #     (slow clients); one more makes the oldest get 408
    # @!attribute [r] keep_alive
    #   @return [Numeric, false] seconds a `herd serve` worker keeps a connection open for the client's next
    #     request after a response (HTTP/1.1, a response herd frames itself); false (the default): every
    #     response ends its connection, as Unicorn's and Pitchfork's do
    # @!attribute [r] early_hints
    #   @return [Boolean] whether env["rack.early_hints"] is offered (HTTP/1.1 requests only)
    # @!attribute [r] errors
    #   @return [IO] rack.errors, and where backtraces of application errors go
    # @!attribute [r] logger
    #   @return [#call, #puts, #write, nil] gets one line per error; nil: {errors}
    Options = Struct.new(
      :max_request_line, :max_header_count, :max_header_bytes, :max_body,
      :body_spool_threshold, :read_timeout, :max_pending_heads, :keep_alive, :early_hints, :errors, :logger,
      keyword_init: true
    ) do
      # Defaults; `errors` is taken from $stderr when the options are built.
      def self.defaults
        {
          max_request_line: 8 * 1024,
          max_header_count: 100,
          max_header_bytes: 64 * 1024,
          max_body: nil,
          body_spool_threshold: 112 * 1024,
          read_timeout: 30,
          max_pending_heads: 64,
          keep_alive: false,
          early_hints: false,
          errors: $stderr,
          logger: nil
        }
      end

      # @raise [ArgumentError] on an unknown option
      # @raise [Herd::ConfigError] on a value out of range
      def initialize(**options)
        super(**self.class.defaults.merge(options))
        validate
        freeze
      end

      private

      def validate
        %i[max_request_line max_header_count max_header_bytes max_pending_heads].each { |name| positive_integer(name) }
        non_negative_integer(:body_spool_threshold)
        non_negative_integer(:max_body) unless max_body.nil?
        invalid(:read_timeout, "a positive number of seconds") unless positive_number?(read_timeout)
        unless keep_alive == false || positive_number?(keep_alive)
          invalid(:keep_alive, "false or a positive number of seconds")
        end
        invalid(:early_hints, "true or false") unless [true, false].include?(early_hints)
        unless %i[write puts flush].all? { |m| errors.respond_to?(m) }
          invalid(:errors, "an IO (responding to #write, #puts and #flush)")
        end
        return if logger.nil? || %i[call puts write].any? { |m| logger.respond_to?(m) }

        invalid(:logger, "nil, a callable or an IO")
      end

      def positive_number?(value)
        value.is_a?(Numeric) && value.positive?
      end

      def positive_integer(name)
        value = self[name]
        invalid(name, "a positive Integer") unless value.is_a?(Integer) && value.positive?
      end

      def non_negative_integer(name)
        value = self[name]
        invalid(name, "an Integer >= 0") unless value.is_a?(Integer) && value >= 0
      end

      def invalid(name, expected)
        raise Herd::ConfigError, "HTTP option #{name} must be #{expected} (got #{self[name].inspect})"
      end
    end
  end
end
