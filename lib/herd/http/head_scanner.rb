# frozen_string_literal: true

require_relative "../extension"

module Herd
  module HTTP
    # The C fast path of {Parser} (ext/herd/head_scanner), built when the gem
    # is installed (`rake compile` in a checkout). It parses the common
    # request head and returns nil for anything else, which the Ruby parser
    # then parses or refuses: the Ruby parser stays the reference, and every
    # refusal is its own.
    #
    # The same extension checks and writes the common response headers
    # (`FieldLines`, ext/herd/head_scanner/field_lines.c) in front of
    # {ResponseHeaders}, the reference there.
    #
    # `HERD_HEAD_SCANNER=0` (or false, no, off) parses every request and
    # checks every response's headers in Ruby ({Extension}).
    # @api private
    module HeadScanner
      ENV_SWITCH = Extension::ENV_SWITCH
      LOAD_ERROR = Extension::LOAD_ERROR

      # @return [Boolean] whether the extension is loaded (whatever the switch says)
      def self.built?
        Extension.built? && respond_to?(:scan)
      end

      # @return [String, nil] why requests are parsed in Ruby, nil when the scanner is used
      def self.unused_reason(env = ENV)
        return "the C head scanner is not built (#{LOAD_ERROR}); `rake compile` builds it" unless built?

        Extension.unused_reason(env)
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
