# frozen_string_literal: true

module Herd
  module Cluster
    # JSON text for `/stats`, written without the json library: the monitor
    # runs without RubyGems, so a `require "json"` there would load Ruby's
    # default json, and a mold forked afterwards whose bundle locks another
    # json version would fail to boot ("You have already activated json
    # 2.6.1, but your Gemfile requires json 3.1.0"). The stats are Hashes,
    # Arrays, Strings, Symbols, numbers, booleans and nil: this is enough.
    # @api private
    module JSONWriter
      ESCAPES = {"\"" => "\\\"", "\\" => "\\\\", "\n" => "\\n", "\r" => "\\r", "\t" => "\\t"}.freeze
      # strftime rather than Time#iso8601, for the same reason ("time").
      TIMESTAMP = "%Y-%m-%dT%H:%M:%S.%LZ"

      module_function

      # @param value [Hash, Array, String, Symbol, Numeric, true, false, nil]
      # @return [String]
      # @raise [TypeError] for anything else
      def generate(value)
        case value
        when Hash then "{#{value.map { |key, item| "#{string(key.to_s)}:#{generate(item)}" }.join(",")}}"
        when Array then "[#{value.map { |item| generate(item) }.join(",")}]"
        when String, Symbol then string(value.to_s)
        when Integer then value.to_s
        when Float then value.finite? ? value.to_s : "null"
        when true then "true"
        when false then "false"
        when nil then "null"
        else raise TypeError, "no JSON for #{value.class}"
        end
      end

      # @param time [Time]
      # @return [String] ISO 8601 in UTC, milliseconds
      def time(time)
        time.utc.strftime(TIMESTAMP)
      end

      def string(text)
        text = text.encode(Encoding::UTF_8, invalid: :replace, undef: :replace).scrub
        escaped = text.gsub(/["\\\x00-\x1f]/) { |char| ESCAPES.fetch(char) { format("\\u%04x", char.ord) } }
        "\"#{escaped}\""
      end
    end
  end
end
