# frozen_string_literal: true

require "rack/version"
require_relative "grammar"
require_relative "errors"
require_relative "../extension"

module Herd
  module HTTP
    # Checks and serializes the headers an application returned. Nothing is
    # written until every name and value is known to be safe: a CR or LF in a
    # value would let whoever controls it add headers or a second response.
    #
    # The framing headers (content-length, transfer-encoding) and the
    # connection headers are noted, not trusted blindly: herd decides framing
    # and always closes the connection.
    class ResponseHeaders
      include Grammar

      # Rack 2 joined multiple values with "\n" (set-cookie); Rack 3 uses Arrays
      # and forbids newlines. Splitting is safe (each piece becomes its own
      # line under the same name), so it is done when Rack 2 is loaded.
      SPLIT_NEWLINES = Gem::Version.new(Rack.release) < Gem::Version.new("3")
      DIGITS = /\A\d+\z/
      EMPTY = ""
      # Names already checked (tokens, not "rack."), with their kind
      # (:field for one herd does not look at). Applications send the same
      # few names with every response: a Hash lookup instead of a regex and
      # a classification per header. Bounded: names an application makes up
      # per response are checked every time once it is full.
      CHECKED_NAMES = {}
      CHECKED_NAMES_LIMIT = 512
      # The C fast path ({FieldLines}, in herd's C extension and off with
      # it, {Extension}): the common headers, set exactly as this class sets them,
      # without a regex or a method call per header. It takes nothing it is
      # unsure of, and this class serializes or refuses the rest.
      FAST_PATH = (FieldLines if Extension.unused_reason.nil? && defined?(FieldLines))

      # @return [String] "name: value\r\n" lines
      attr_reader :lines
      # @return [Integer, nil] the application's content-length
      attr_reader :content_length
      # @return [Boolean] whether the application set transfer-encoding itself
      attr_reader :transfer_encoding
      # @return [Boolean] whether the application set a date
      attr_reader :date
      # @return [String, nil] the application's connection header (kept for 101 only)
      attr_reader :connection
      # @return [#call, nil] the rack.hijack response header (partial hijack)
      attr_reader :hijack

      # @param headers [Hash] the application's headers
      # @param split_newlines [Boolean] Rack 2 behaviour (see {SPLIT_NEWLINES})
      # @param fast_path [#fill, nil] {FAST_PATH}, or nil for Ruby alone
      # @raise [InvalidResponse]
      def initialize(headers, split_newlines: SPLIT_NEWLINES, fast_path: FAST_PATH)
        return if fast_path&.fill(self, headers) # no newline in its values: the same with split_newlines

        raise InvalidResponse, "headers are a #{headers.class}, not a Hash" unless headers.respond_to?(:each_pair)

        @split_newlines = split_newlines
        @lines = EMPTY.dup
        @content_length = nil
        @transfer_encoding = false
        @date = false
        headers.each_pair { |name, value| add(name, value) }
      end

      private

      def add(name, value)
        kind = CHECKED_NAMES[name] || check_name(name)
        return special(name, value) if kind == :rack

        if value.is_a?(String) && !(@split_newlines && value.include?("\n"))
          add_value(name, value, kind) # the usual case: one String, nothing to build
        else
          values(name, value).each { |item| add_value(name, item, kind) }
        end
      end

      # @return [Symbol] the name's kind (:rack for "rack." names, never remembered)
      def check_name(name)
        raise InvalidResponse, "header name #{name.inspect} is not a String" unless name.is_a?(String)
        return :rack if name.start_with?("rack.")
        raise InvalidResponse, "header name #{name.inspect} is not a token" unless TOKEN.match?(name)

        kind = kind(name) || :field
        CHECKED_NAMES[name] = kind if CHECKED_NAMES.size < CHECKED_NAMES_LIMIT
        kind
      end

      def add_value(name, value, kind)
        if INVALID_FIELD_VALUE.match?(value)
          raise InvalidResponse, "header #{name} has a control character (CR, LF, NUL...) in #{value.inspect}"
        end

        case kind
        when :field then @lines << name << ": " << value << "\r\n"
        when :connection then @connection = @connection ? "#{@connection}, #{value}" : value
        when :keep_alive then nil
        else
          note(kind, value)
          @lines << name << ": " << value << "\r\n"
        end
      end

      # The headers herd looks at, told apart by length and an ASCII
      # case-insensitive compare (no downcased copy of every name).
      def kind(name)
        case name.bytesize
        when 4 then :date if name.casecmp("date").zero?
        when 10
          if name.casecmp("connection").zero? then :connection
          elsif name.casecmp("keep-alive").zero? then :keep_alive
          end
        when 14 then :content_length if name.casecmp("content-length").zero?
        when 17 then :transfer_encoding if name.casecmp("transfer-encoding").zero?
        end
      end

      # Headers starting with "rack." talk to the server and are never sent.
      def special(name, value)
        @hijack = value if name == "rack.hijack"
      end

      def values(name, value)
        list = value.is_a?(Array) ? value : [value]
        list.flat_map do |item|
          unless item.is_a?(String) || item.is_a?(Numeric)
            raise InvalidResponse, "header #{name} has a #{item.class} value"
          end

          item = item.to_s
          @split_newlines ? item.split("\n") : item
        end
      end

      def note(kind, value)
        case kind
        when :content_length
          raise InvalidResponse, "content-length #{value.inspect} is not a number" unless DIGITS.match?(value)
          if @content_length && @content_length != value.to_i
            raise InvalidResponse, "two different content-length values"
          end

          @content_length = value.to_i
        when :transfer_encoding then @transfer_encoding = true
        when :date then @date = true
        end
        raise InvalidResponse, "both content-length and transfer-encoding" if @content_length && @transfer_encoding
      end
    end
  end
end
