# frozen_string_literal: true

module Herd
  module HTTP
    # A parsed request head: what the parser found and what the body reader and
    # the env builder need. Strings are binary, as received.
    #
    # @!attribute method
    #   @return [String] the method token ("GET")
    # @!attribute target
    #   @return [String] the path and query as sent (for absolute-form, without scheme and authority)
    # @!attribute path
    #   @return [String] PATH_INFO: the target up to "?", not decoded
    # @!attribute query
    #   @return [String] QUERY_STRING: what follows the first "?", or ""
    # @!attribute version
    #   @return [String] "HTTP/1.1" or "HTTP/1.0"
    # @!attribute headers
    #   @return [Hash{String => String}] env-keyed headers (HTTP_*, CONTENT_TYPE, CONTENT_LENGTH), duplicates joined
    # @!attribute content_length
    #   @return [Integer, nil] the body length announced by Content-Length
    # @!attribute chunked
    #   @return [Boolean] whether the body is chunked
    # @!attribute expect_continue
    #   @return [Boolean] whether the client sent Expect: 100-continue
    Request = Struct.new(:method, :target, :path, :query, :version, :headers, :content_length, :chunked,
      :expect_continue) do
      # @return [Boolean] whether a body follows the head
      def body?
        chunked || (content_length || 0).positive?
      end

      # @return [Boolean] whether the client speaks HTTP/1.1 (chunked responses, 1xx)
      def http11?
        version == "HTTP/1.1"
      end

      # @return [Boolean] whether the response must have no body
      def head?
        method == "HEAD"
      end
    end
  end
end
