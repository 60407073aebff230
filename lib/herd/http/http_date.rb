# frozen_string_literal: true

module Herd
  module HTTP
    # The Date header value (RFC 9110 §5.6.7), formatted once per second.
    module HTTPDate
      FORMAT = "%a, %d %b %Y %H:%M:%S GMT"
      @cache = [nil, nil].freeze # [second, value], swapped as one object
      @closing = [nil, nil].freeze # [value, closing lines]

      # @return [String] e.g. "Sun, 06 Nov 1994 08:49:37 GMT"
      def self.now
        second = Process.clock_gettime(Process::CLOCK_REALTIME, :second)
        cached_second, value = @cache
        return value if cached_second == second

        value = Time.at(second).utc.strftime(FORMAT).freeze
        @cache = [second, value].freeze
        value
      end

      # @return [String] "date: VALUE\r\nconnection: close\r\n\r\n", how most
      #   response heads end: one append instead of five
      def self.closing_lines
        value = now
        cached_value, lines = @closing
        return lines if cached_value.equal?(value)

        lines = "date: #{value}\r\nconnection: close\r\n\r\n".freeze
        @closing = [value, lines].freeze
        lines
      end
    end
  end
end
