# frozen_string_literal: true

require_relative "../extension"

module Herd
  module HTTP
    # The C fast path of {Parser} (ext/herd/native/head_scanner.c), part of
    # herd's C extension ({Extension}). It parses the common request head and
    # returns nil for anything else, which the Ruby parser then parses or
    # refuses: the Ruby parser stays the reference, and every refusal is its
    # own.
    #
    # `HERD_C_EXTENSION=0` (or false, no, off) parses every request in Ruby,
    # and leaves the rest of the extension unused too.
    # @api private
    module HeadScanner
      # @return [Boolean] whether the scanner is loaded (whatever the switch says)
      def self.built?
        Extension.built? && respond_to?(:scan)
      end

      # @return [String, nil] why requests are parsed in Ruby, nil when the scanner is used
      def self.unused_reason(env = ENV)
        Extension.unused_reason(env) ||
          (built? ? nil : "the head scanner is not built into herd's C extension; `rake compile` builds it")
      end

      # @return [String] which parser reads request heads, for a boot log
      def self.describe(env = ENV)
        reason = unused_reason(env)
        return "request heads parsed and response headers checked in Ruby: #{reason}" if reason

        "request heads parsed and response headers checked in C (Ruby for the rest)"
      end
    end
  end
end
