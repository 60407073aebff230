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

      # Host (and the authority of an absolute-form target): reg-name, IPv4 or an
      # IP literal, optional port; no userinfo. The same set Rack::Lint accepts.
      HOST = /\A(?:\[[0-9A-Fa-f:.]+\]|(?:%\h\h|[A-Za-z0-9\-._~!$&'()*+,;=])*)(?::\d*)?\z/n

      CRLF = "\r\n"
    end
  end
end
