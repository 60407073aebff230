# frozen_string_literal: true

module Herd
  module HTTP
    # The byte classes of RFC 9110/9112 that the parser, the chunked decoder and
    # the response writer share. Every pattern is binary (/n): requests are read
    # as bytes and never transcoded.
    module Grammar
      # tchar: the characters of a token (method, header name, chunk-ext name).
      TCHAR = "!#$%&'*+\\-.^_`|~0-9A-Za-z"
      TOKEN = /\A[#{TCHAR}]+\z/n

      # A field value may hold HTAB, SP, VCHAR and obs-text; never NUL, CR, LF or
      # another control character (those are how header injection and smuggling
      # are done).
      INVALID_FIELD_VALUE = /[\x00-\x08\x0A-\x1F\x7F]/n

      # The host of an authority: an IP literal, or a reg-name (which covers
      # IPv4), never empty (RFC 9110 §4.2.1: an http URI with an empty host is
      # invalid). No userinfo: "@" is not in the set (RFC 9110 §4.2.4).
      HOST_NAME = "(?:\\[[0-9A-Fa-f:.]+\\]|(?:%\\h\\h|[A-Za-z0-9\\-._~!$&'()*+,;=])+)"
      # A port: digits (RFC 3986 §3.2.3), empty meaning the default (RFC 9110
      # §4.2.3), leading zeros allowed, and a value that fits TCP's 16-bit
      # port field, 0..65535 (RFC 9293 §3.1). Checked in the pattern itself,
      # so a valid Host costs no String or Integer. The zeros are taken
      # possessively (0*+): a Host of 60,000 zeros then costs one pass, not a
      # retry of the alternatives at every zero.
      PORT = "(?::0*+(?:[1-9]\\d{0,3}|[1-5]\\d{4}|6[0-4]\\d{3}|65[0-4]\\d\\d|655[0-2]\\d|6553[0-5])?)"
      # The authority of an absolute-form target: host, optional port.
      AUTHORITY = /\A#{HOST_NAME}#{PORT}?\z/n
      # A Host header: an authority, or empty (RFC 9110 §7.2: the value a client
      # sends for a target without an authority). The set Rack::Lint accepts,
      # less empty hosts with a port and ports above 65535.
      HOST = /\A(?:#{HOST_NAME}#{PORT}?)?\z/n

      CRLF = "\r\n"
    end
  end
end
