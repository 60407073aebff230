# frozen_string_literal: true

require_relative "grammar"
require_relative "errors"
require_relative "request"
require_relative "options"
require_relative "head_scanner"

module Herd
  module HTTP
    # Parses a complete request head (request line, header lines, the empty
    # line) into a {Request}, refusing everything RFC 9112 does not allow and
    # everything that lets two parsers disagree on where a request ends.
    #
    # The head is found and its size limits (414, 431) are enforced by the
    # {SocketReader}; this class enforces the grammar (400), the header count
    # and the header-name length (431), transfer codings other than chunked
    # and CONNECT (501), and the HTTP version (505; HTTP/1.2 to 1.9 are
    # taken as 1.1). It is pure: a String in, a Request out.
    class Parser
      include Grammar

      REQUEST_LINE = /\A([#{TCHAR}]+) ([\x21-\x7E]+) HTTP\/(\d)\.(\d)\z/n
      # Control characters other than HTAB, CR and LF: never valid in a head.
      CONTROL = /[\x00-\x08\x0B\x0C\x0E-\x1F\x7F]/n
      # A request line that is fine but for a version of more than one digit each.
      VERSION_ONLY_WRONG = %r{\A[#{TCHAR}]+ [\x21-\x7E]+ HTTP/\d+\.\d+\z}n
      # The end of a request line of HTTP/1.2 to 1.9, answered as 1.1 (RFC 9112 §2.3).
      HIGHER_MINOR = %r{ HTTP/1\.[2-9]\z}n
      CONTENT_LENGTH_VALUE = /\A\d{1,18}\z/n # 18 digits: never a Bignum, far above any max_body
      ABSOLUTE_FORM = %r{\Ahttps?://([^/?#]*)(.*)\z}ni
      # Transfer codings, chunked last (RFC 9112 §6.1, §6.3): a list herd can
      # frame but not decode (`gzip, chunked`), answered 501, not 400.
      CODINGS_THEN_CHUNKED = /\A(?:[#{TCHAR}]+[ \t]*,[ \t]*)+chunked\z/ni
      TARGET = /\A[\x21-\x7E]+\z/n
      # Method strings for the fast path of {#parse}: frozen, shared by every request.
      METHOD_PREFIXES = %w[GET POST HEAD PUT DELETE PATCH OPTIONS]
        .to_h { |method| ["#{method} ".freeze, method.freeze] }.freeze

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
      # The longest header (and trailer) name taken; a longer one gets 431.
      # Puma and Unicorn cap names at 256 bytes too; the C scanner's MAX_NAME.
      MAX_HEADER_NAME = 256

      # The C scanner returns the very Strings this parser shares, so a
      # Request is the same whichever parser made it.
      HeadScanner.setup(Request, METHOD_PREFIXES.values, "HTTP/1.1", "HTTP/1.0", "") if HeadScanner.built?

      # @param max_header_count [Integer] more header lines get 431
      # @param scanner [#scan, nil] the C fast path ({HeadScanner}); nil parses everything in Ruby
      def initialize(max_header_count: Options.defaults[:max_header_count],
        scanner: HeadScanner.unused_reason ? nil : HeadScanner)
        @max_header_count = max_header_count
        @scanner = scanner
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

        # UTF-8 whatever the name's encoding (a token is ASCII): every key
        # the same, the C scanner's too, however the client spelled it.
        key = name.upcase.tr("-", "_").force_encoding(Encoding::UTF_8)
        (key == "CONTENT_TYPE" || key == "CONTENT_LENGTH") ? -key : -"HTTP_#{key}"
      end

      # @param head [String] binary, from the first byte of the request line to the empty line (CRLF CRLF) included
      # @return [Request]
      # @raise [RequestError] 400, 431, 501 or 505
      def parse(head)
        @scanner&.scan(head, @max_header_count) || parse_in_ruby(head)
      end

      # The reference: what {HeadScanner} returns for a head it takes, this
      # returns too; every head it leaves, this parses or refuses.
      # @param head [String]
      # @return [Request]
      # @raise [RequestError] 400, 431, 501 or 505
      def parse_in_ruby(head)
        lines = split_lines(head)
        request = request_line(lines.first || "")
        headers = request.headers = fields(lines, 1)
        request.content_length = content_length(headers)
        request.chunked = chunked?(headers, request.version, request.content_length)
        # Host first: RFC 9112 §3.2 applies to every request, absolute-form
        # included, whose authority then replaces it (§3.2.2).
        check_host(headers, request.version)
        parse_target(request, headers)
        request.expect_continue = headers["HTTP_EXPECT"]&.casecmp?("100-continue") || false
        request
      end

      # Parses a trailer section (field lines and the final CRLF) like headers.
      # @param section [String]
      # @return [Hash{String => String}] env-keyed
      # @raise [RequestError] 400, 431
      def parse_trailers(section)
        fields(split_lines(section), 0)
      end

      private

      # @return [Request] method, version and the raw target (in #target) filled in
      def request_line(line)
        fast_request_line(line) || slow_request_line(line)
      end

      # "GET /path HTTP/1.1", the shape of nearly every request, taken apart
      # without a MatchData and with a shared String for the method and the
      # version (HTTP/1.2 to 1.9 too: the C scanner shares them as well).
      def fast_request_line(line)
        version =
          if line.end_with?(" HTTP/1.1") then "HTTP/1.1"
          elsif line.end_with?(" HTTP/1.0") then "HTTP/1.0"
          elsif HIGHER_MINOR.match?(line) then "HTTP/1.1"
          else return nil
          end

        METHOD_PREFIXES.each do |prefix, method|
          next unless line.start_with?(prefix)

          target = line.byteslice(prefix.bytesize, line.bytesize - prefix.bytesize - 9)
          return TARGET.match?(target) ? Request.new(method, target, nil, nil, version) : nil
        end
        nil
      end

      def slow_request_line(line)
        match = REQUEST_LINE.match(line) or refuse_request_line(line)
        Request.new(match[1], match[2], nil, nil, http_version(match[3], match[4]))
      end

      # Splits a head (or trailer section) into its lines, refusing control
      # characters and any CR or LF that is not part of a CRLF. Two scans in C
      # (a regex search, a count) instead of a regex per line: Ruby pays per call.
      def split_lines(head)
        raise RequestError.new(400, "control character (NUL, VT, ESC...) in the request head") if CONTROL.match?(head)

        lines = head.split(CRLF)
        # Every CR and LF belongs to a CRLF: one per line plus the empty line.
        unless head.count("\r\n") == 2 * (lines.size + 1)
          raise RequestError.new(400, "bare CR or LF in the request head")
        end

        lines
      end

      # @return [Hash{String => String}] env-keyed headers of lines[from..]
      def fields(lines, from)
        count = lines.size - from
        raise RequestError.new(431, "more than #{@max_header_count} header lines") if count > @max_header_count

        headers = {}
        index = from
        while (line = lines[index])
          colon = line.index(":") or refuse_field_line(line)
          name = line.byteslice(0, colon)
          key = @env_keys[name] || remember(name, line)
          if key # nil: an underscore in the name, dropped
            value = line.byteslice(colon + 1, line.bytesize - colon - 1)
            value.strip! # only SP and HTAB can be there: control characters were refused
            add_header(headers, key, value)
          end
          index += 1
        end
        headers
      end

      # RFC 9112 §2.3: a higher minor version of 1.x (HTTP/1.2 to 1.9) is
      # answered as the highest herd speaks, 1.1; any other major gets 505.
      def http_version(major, minor)
        if major == "1"
          return "HTTP/1.0" if minor == "0"

          return "HTTP/1.1"
        end

        raise RequestError.new(505, "HTTP version #{major}.#{minor} is not supported")
      end

      def add_header(headers, key, value)
        previous = headers[key]
        if previous.nil?
          headers[key] = value
        elsif key == "CONTENT_LENGTH"
          # One rule for two lines and for a list on one line ("5, 5", refused
          # as not digits): RFC 9110 §8.6 lets a recipient take identical
          # values, but differing ones are the classic smuggling vector, and a
          # proxy that joins or keeps duplicates differently is how they get in.
          raise RequestError.new(400, "more than one Content-Length header")
        elsif key == "HTTP_HOST"
          raise RequestError.new(400, "more than one Host header")
        else
          # RFC 9110 §5.3: duplicates are one comma-separated list; Cookie is the
          # exception (RFC 6265 §5.4 joins with "; ").
          headers[key] = "#{previous}#{(key == "HTTP_COOKIE") ? "; " : ", "}#{value}"
        end
      end

      # A name seen for the first time: checked, converted, cached (only
      # names within MAX_HEADER_NAME are, so the cache needs no check).
      def remember(name, line)
        refuse_field_line(line) unless TOKEN.match?(name)
        if name.bytesize > MAX_HEADER_NAME
          raise RequestError.new(431, "header name longer than #{MAX_HEADER_NAME} bytes: #{name[0, 64].inspect}...")
        end

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
      # together with Content-Length, never in HTTP/1.0. Other codings before a
      # final chunked (`gzip, chunked`, or `gzip` and `chunked` on two lines)
      # are well framed but herd decodes none of them: 501 (§6.1's SHOULD).
      # Everything else, chunked not last or twice, is 400 (§6.3's MUST).
      def chunked?(headers, version, content_length)
        coding = headers["HTTP_TRANSFER_ENCODING"] or return false
        raise RequestError.new(400, "Transfer-Encoding in an HTTP/1.0 request") if version == "HTTP/1.0"
        raise RequestError.new(400, "both Content-Length and Transfer-Encoding") if content_length
        return true if coding.casecmp?("chunked")

        if CODINGS_THEN_CHUNKED.match?(coding) &&
            coding.split(",")[0..-2].none? { |name| name.strip.casecmp?("chunked") }
          raise RequestError.new(501, "Transfer-Encoding #{coding[0, 64].inspect}: herd decodes chunked alone")
        end
        raise RequestError.new(400, "Transfer-Encoding #{coding[0, 64].inspect} is not chunked")
      end

      # Fills in the target (without scheme and authority), PATH_INFO and QUERY_STRING.
      def parse_target(request, headers)
        # RFC 9110 §9.1: a method the server does not implement SHOULD get 501.
        # CONNECT asks for a tunnel, and herd is no proxy.
        raise RequestError.new(501, "CONNECT: herd is no proxy") if request.method == "CONNECT"

        target = request.target
        if target.start_with?("/")
          origin_form(request, target)
        elsif target == "*"
          raise RequestError.new(400, "asterisk-form target with #{request.method}") unless request.method == "OPTIONS"

          request.path = "*"
          request.query = ""
        elsif (absolute = ABSOLUTE_FORM.match(target))
          absolute_form(request, absolute[1], absolute[2], headers)
        else
          raise RequestError.new(400, "invalid request target #{target[0, 64].inspect}")
        end
      end

      def origin_form(request, target)
        raise RequestError.new(400, "fragment in the request target") if target.include?("#")

        request.target = target
        if (query = target.index("?"))
          request.path = target[0, query]
          request.query = target[query + 1..]
        else
          request.path = target
          request.query = ""
        end
      end

      # RFC 9112 §3.2.2: the server MUST ignore the Host header (checked already)
      # and use the target's authority, which therefore replaces it in the env.
      def absolute_form(request, authority, rest, headers)
        unless AUTHORITY.match?(authority)
          raise RequestError.new(400, "invalid authority in the request target #{authority[0, 64].inspect}")
        end

        rest = "/#{rest}" unless rest.start_with?("/")
        headers["HTTP_HOST"] = authority
        origin_form(request, rest)
      end

      # RFC 9112 §3.2: exactly one valid Host in HTTP/1.1, whatever the target's
      # form; at most one, valid, in HTTP/1.0 (duplicates are refused while adding).
      def check_host(headers, version)
        host = headers["HTTP_HOST"]
        if host.nil?
          raise RequestError.new(400, "no Host header in an HTTP/1.1 request") if version == "HTTP/1.1"
        elsif !HOST.match?(host)
          raise RequestError.new(400, "invalid Host header #{host[0, 64].inspect}")
        end
      end

      def refuse_request_line(line)
        if line.match?(VERSION_ONLY_WRONG)
          raise RequestError.new(505, "HTTP version not supported: #{line[-16..].inspect}")
        end

        raise RequestError.new(400, "invalid request line #{line[0, 64].inspect}")
      end

      def refuse_field_line(line)
        reason =
          if line.start_with?(" ", "\t") then "obs-fold (a header line starting with whitespace)"
          elsif line.match?(/\A[#{TCHAR}]+[ \t]+:/no) then "whitespace before the colon of a header"
          elsif line.empty? then "empty line inside the head"
          else "invalid header line"
          end
        raise RequestError.new(400, "#{reason}: #{line[0, 64].inspect}")
      end
    end
  end
end
