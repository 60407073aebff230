# frozen_string_literal: true

module Herd
  module HTTP
    # The Date header value (RFC 9110 §5.6.7), formatted once per second.
    module HTTPDate
      FORMAT = "%a, %d %b %Y %H:%M:%S GMT"
      @cache = [nil, nil].freeze # [second, value], swapped as one object
      @closing = [nil, nil].freeze # [value, closing lines]
      @keeping = [nil, nil].freeze # [value, keep-alive lines]

      # @return [String] e.g. "Sun, 06 Nov 1994 08:49:37 GMT"
      def self.now
        second = Process.clock_gettime(Process::CLOCK_REALTIME, :second)
        cached_second, value = @cache
        return value if cached_second == second

        value = Time.at(second).utc.strftime(FORMAT).freeze
        @cache = [second, value].freeze
        value
      end

      # @param keep_alive [Boolean] the connection stays open after the response
      # @return [String] "date: VALUE\r\nconnection: close\r\n\r\n", how most
      #   response heads end: one append instead of five; without the
      #   connection line for a connection kept open
      def self.closing_lines(keep_alive = false)
        value = now
        cached_value, lines = keep_alive ? @keeping : @closing
        return lines if cached_value.equal?(value)

        if keep_alive
          lines = "date: #{value}\r\n\r\n".freeze
          @keeping = [value, lines].freeze
        else
          lines = "date: #{value}\r\nconnection: close\r\n\r\n".freeze
          @closing = [value, lines].freeze
        end
        lines
      end
    end
  end
end
