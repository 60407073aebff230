# frozen_string_literal: true

require_relative "../errors"

module Herd
  module HTTP
    # Base class of the HTTP layer's own errors.
    class Error < Herd::Error; end

    # The client sent something herd refuses; {#status} is the response it gets
    # (400, 408, 413, 414, 431, 501 or 505) before the connection is closed.
    class RequestError < Error
      # @return [Integer] the HTTP status answered
      attr_reader :status

      # @param status [Integer]
      # @param message [String] what was wrong, for the log (never sent to the client)
      def initialize(status, message)
        @status = status
        super(message)
      end
    end

    # The client went away (EOF in the middle of a request, EPIPE or ECONNRESET
    # while writing the response).
    class ClientDisconnected < Error; end

    # The application returned something herd will not send: a status that is
    # not an Integer in 100..999, a header name that is not a token, a header
    # value with CR, LF, NUL or another control character. Answered with 500.
    class InvalidResponse < Error; end
  end
end
