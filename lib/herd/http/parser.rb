# frozen_string_literal: true

require "strscan"
require_relative "grammar"
require_relative "errors"
require_relative "request"
require_relative "options"

module Herd
  module HTTP
    # Parses a complete request head (request line, header lines, the empty
    # line) into a {Request}, refusing everything RFC 9112 does not allow and
    # everything that lets two parsers disagree on where a request ends.
    #
    # The head is found and its size limits (414, 431) are enforced by the
    # {SocketReader}; this class enforces the grammar (400), the header count
    # (431) and the HTTP version (505). It is pure: a String in, a Request out.
    class Parser
      include Grammar

      REQUEST_LINE = /\A([#{TCHAR}]+) ([\x21-\x7E]+) HTTP\/(\d)\.(\d)\r\n/n
      # A field line or, with no captures, the empty line that ends the head. A
      # field line: a token, the colon right after it (whitespace before the
      # colon is refused, RFC 9112 §5.1), the value without its surrounding
      # whitespace and without control characters (Grammar::INVALID_FIELD_VALUE).
      FIELD_LINE_OR_END = /(?:([#{TCHAR}]+):[ \t]*((?:[^\x00-\x20\x7F](?:[^\x00-\x08\x0A-\x1F\x7F]*[^\x00-\x20\x7F])?)?)[ \t]*)?\r\n/n
      # A request line that is fine but for a version of more than one digit each.
      VERSION_ONLY_WRONG = %r{\A[#{TCHAR}]+ [\x21-\x7E]+ HTTP/\d+\.\d+\z}n
      CONTENT_LENGTH_VALUE = /\A\d{1,18}\z/n # 18 digits: never a Bignum, far above any max_body
      ABSOLUTE_FORM = %r{\Ahttps?://([^/?#]*)(.*)\z}ni

      # Header names whose env key is known, in the spellings clients use. Other
      # names are converted once and remembered (up to CACHE_LIMIT of them).
      COMMON_HEADERS = %w[
        Host User-Agent Accept Accept-Language Accept-Encoding Accept-Charset Connection Cookie
        Referer Origin Cache-Control Pragma Upgrade-Insecure-Requests If-None-Match If-Modified-Since
        Authorization Content-Type Content-Length Transfer-Encoding Expect Range Upgrade DNT TE Via
        X-Forwarded-For X-Forwarded-Proto X-Forwarded-Host X-Forwarded-Port X-Real-IP X-Request-Id
        X-Requested-With X-CSRF-Token Sec-Fetch-Site Sec-Fetch-Mode Sec-Fetch-User Sec-Fetch-Dest
        Sec-CH-UA Sec-CH-UA-Mobile Sec-CH-UA-Platform Priority
      ].freeze
      CACHE_LIMIT = 1024

      # @param max_header_count [Integer] more header lines get 431
      def initialize(max_header_count: Options.defaults[:max_header_count])
        @max_header_count = max_header_count
        @env_keys = {}
        COMMON_HEADERS.each do |name|
          [name, name.downcase].each { |spelling| @env_keys[spelling] = self.class.env_key(spelling) }
        end
      end

      # The Rack env key of a header name: "HTTP_X_FOO", or CONTENT_TYPE and
      # CONTENT_LENGTH without the prefix (CGI). nil for names with an
      # underscore: X_Foo and X-Foo would both become HTTP_X_FOO, so a client
      # could overwrite a header set by the proxy in front; nginx drops them too.
      # @param name [String] a header name (a token)
      # @return [String, nil]
      def self.env_key(name)
        return nil if name.include?("_")

        key = name.upcase.tr("-", "_")
        (key == "CONTENT_TYPE" || key == "CONTENT_LENGTH") ? -key : -"HTTP_#{key}"
      end

      # @param head [String] binary, from the first byte of the request line to the empty line (CRLF CRLF) included
      # @return [Request]
      # @raise [RequestError] 400, 431 or 505
      def parse(head)
        line = REQUEST_LINE.match(head) || refuse_request_line(head)
        method = line[1]
        version = http_version(line[3], line[4])
        headers = parse_headers(head, line.end(0))
        content_length = content_length(headers)
        chunked = chunked?(headers, version, content_length)
        target, path, query = parse_target(line[2], method, headers)
        check_host(headers, version)
        expect_continue = headers["HTTP_EXPECT"]&.casecmp?("100-continue") || false
        Request.new(method, target, path, query, version, headers, content_length, chunked, expect_continue)
      end

      # Parses header (or trailer) lines into env keys, from `start` to the empty line.
      # @return [Hash{String => String}]
      def parse_headers(head, start)
        scanner = StringScanner.new(head)
        scanner.pos = start
        headers = {}
        count = 0
        # One match per line: a field line, or the empty line that ends the head
        # (then there is no name). Fewer calls is what makes Ruby parsers fast.
        while (scanner.skip(FIELD_LINE_OR_END) || refuse_field_line(head, scanner.pos)) && (name = scanner[1])
          count += 1
          raise RequestError.new(431, "more than #{@max_header_count} header lines") if count > @max_header_count

          add_header(headers, name, scanner[2])
        end
        raise RequestError.new(400, "bytes after the end of the head") unless scanner.eos?

        headers
      end

      private

      def http_version(major, minor)
        return "HTTP/1.1" if major == "1" && minor == "1"
        return "HTTP/1.0" if major == "1" && minor == "0"

        raise RequestError.new(505, "HTTP version #{major}.#{minor} is not supported")
      end

      def add_header(headers, name, value)
        key = @env_keys[name] || remember(name)
        return unless key # an underscore in the name: dropped

        previous = headers[key]
        if previous.nil?
          headers[key] = value
        elsif key == "CONTENT_LENGTH"
          # Identical duplicates are harmless (RFC 9110 §8.6); differing ones are the
          # classic smuggling vector.
          raise RequestError.new(400, "differing Content-Length headers") unless previous == value
        elsif key == "HTTP_HOST"
          raise RequestError.new(400, "more than one Host header")
        else
          # RFC 9110 §5.3: duplicates are one comma-separated list; Cookie is the
          # exception (RFC 6265 §5.4 joins with "; ").
          headers[key] = "#{previous}#{(key == "HTTP_COOKIE") ? "; " : ", "}#{value}"
        end
      end

      def remember(name)
        key = self.class.env_key(name)
        @env_keys[name] = key if @env_keys.size < CACHE_LIMIT
        key
      end

      def content_length(headers)
        value = headers["CONTENT_LENGTH"] or return nil
        raise RequestError.new(400, "invalid Content-Length #{value.inspect}") unless CONTENT_LENGTH_VALUE.match?(value)

        value.to_i
      end

      # RFC 9112 §6.1-6.3: chunked must be the final (here: only) coding, never
      # together with Content-Length, never in HTTP/1.0.
      def chunked?(headers, version, content_length)
        coding = headers["HTTP_TRANSFER_ENCODING"] or return false
        raise RequestError.new(400, "Transfer-Encoding in an HTTP/1.0 request") if version == "HTTP/1.0"
        raise RequestError.new(400, "both Content-Length and Transfer-Encoding") if content_length
        raise RequestError.new(400, "Transfer-Encoding #{coding.inspect} is not chunked") unless coding.casecmp?("chunked")

        true
      end

      # @return [Array(String, String, String)] target, PATH_INFO, QUERY_STRING
      def parse_target(target, method, headers)
        if target.start_with?("/")
          origin_form(target)
        elsif target == "*"
          raise RequestError.new(400, "asterisk-form target with #{method}") unless method == "OPTIONS"

          ["*", "*", ""]
        elsif (absolute = ABSOLUTE_FORM.match(target))
          absolute_form(absolute[1], absolute[2], headers)
        else
          raise RequestError.new(400, "invalid request target #{target[0, 64].inspect}")
        end
      end

      def origin_form(target)
        raise RequestError.new(400, "fragment in the request target") if target.include?("#")

        query = target.index("?")
        query ? [target, target[0, query], target[query + 1..]] : [target, target, ""]
      end

      # RFC 9112 §3.2.2: the authority of an absolute-form target replaces the Host header.
      def absolute_form(authority, rest, headers)
        unless !authority.empty? && HOST.match?(authority)
          raise RequestError.new(400, "invalid authority in the request target #{authority[0, 64].inspect}")
        end

        rest = "/#{rest}" unless rest.start_with?("/")
        headers["HTTP_HOST"] = authority
        origin_form(rest)
      end

      # RFC 9112 §3.2: exactly one valid Host in HTTP/1.1 (duplicates are refused while adding).
      def check_host(headers, version)
        host = headers["HTTP_HOST"]
        if host.nil?
          raise RequestError.new(400, "no Host header in an HTTP/1.1 request") if version == "HTTP/1.1"
        elsif !HOST.match?(host)
          raise RequestError.new(400, "invalid Host header #{host[0, 64].inspect}")
        end
      end

      def refuse_request_line(head)
        line = head[0, head.index("\r\n") || head.bytesize]
        raise RequestError.new(505, "HTTP version not supported: #{line[-16..].inspect}") if line.match?(VERSION_ONLY_WRONG)

        raise RequestError.new(400, "invalid request line #{line[0, 64].inspect}")
      end

      def refuse_field_line(head, position)
        line = head[position, (head.index("\r\n", position) || head.bytesize) - position]
        reason =
          if line.start_with?(" ", "\t") then "obs-fold (a header line starting with whitespace)"
          elsif line.match?(/\A[#{TCHAR}]+[ \t]+:/no) then "whitespace before the colon of a header"
          elsif line.match?(/\A[#{TCHAR}]+:/no) then "invalid character in a header value"
          else "invalid header line"
          end
        raise RequestError.new(400, "#{reason}: #{line[0, 64].inspect}")
      end
    end
  end
end
