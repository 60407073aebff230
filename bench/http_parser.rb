# frozen_string_literal: true

# herd's hand-written HTTP/1.1 request parser against llhttp (the C parser of
# Node.js, through the llhttp gem), on three realistic requests:
#
#   small_get    an API GET as nginx forwards it: 10 headers
#   browser_get  a browser page load: 19 headers, ~1 KB of cookies
#   post_1k      a form POST with a 1 KB body (Content-Length)
#
# Both parse a complete request held in a String into what a Rack server
# needs (method, path, query, env-keyed headers, body), so socket reads are
# left out. Each (mode, request, variant) is timed over a fixed number of
# parses, at least 3 repetitions interleaved across variants, median
# reported; each mode (interpreter, YJIT) runs in its own fresh Ruby.
#
# Then strictness: every request-smuggling vector of the test corpus
# (test/fixtures/http/malformed_requests.rb) is sent to herd's real handler
# over a socket pair and fed to llhttp; the table says who refuses what.
#
#   bundle exec ruby bench/http_parser.rb [--reps N] [--iterations N]
#
# llhttp is in the optional bench group (bundle config set --local with bench
# && bundle install); without it its rows say "skipped". Writes
# bench/results/http_parser.md and bench/results/http_parser.json.

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "json"
require "open3"
require "optparse"
require "rbconfig"
require "socket"
require "herd/http"
require_relative "support/clock"
require_relative "support/report"
require_relative "support/stats"
require_relative "../test/fixtures/http/malformed_requests"

module HTTPParserBench
  REQUESTS = {
    "small_get" => "GET /api/v1/products/42?include=reviews&page=2 HTTP/1.1\r\n" \
      "Host: shop.example.com\r\n" \
      "X-Real-IP: 203.0.113.7\r\n" \
      "X-Forwarded-For: 203.0.113.7\r\n" \
      "X-Forwarded-Proto: https\r\n" \
      "Connection: close\r\n" \
      "User-Agent: curl/8.5.0\r\n" \
      "Accept: application/json\r\n" \
      "Accept-Encoding: gzip\r\n" \
      "X-Request-Id: 5f0c3a9e-2b1d-4c7a-9e8f-1a2b3c4d5e6f\r\n" \
      "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI0MiJ9.c2lnbmF0dXJl\r\n\r\n",
    "browser_get" => "GET /products/shoes/running?color=blue&size=42 HTTP/1.1\r\n" \
      "Host: shop.example.com\r\n" \
      "X-Real-IP: 198.51.100.23\r\n" \
      "X-Forwarded-For: 198.51.100.23\r\n" \
      "X-Forwarded-Proto: https\r\n" \
      "Connection: close\r\n" \
      "sec-ch-ua: \"Chromium\";v=\"124\", \"Google Chrome\";v=\"124\", \"Not-A.Brand\";v=\"99\"\r\n" \
      "sec-ch-ua-mobile: ?0\r\n" \
      "sec-ch-ua-platform: \"Linux\"\r\n" \
      "Upgrade-Insecure-Requests: 1\r\n" \
      "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36\r\n" \
      "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7\r\n" \
      "Sec-Fetch-Site: same-origin\r\n" \
      "Sec-Fetch-Mode: navigate\r\n" \
      "Sec-Fetch-User: ?1\r\n" \
      "Sec-Fetch-Dest: document\r\n" \
      "Referer: https://shop.example.com/products/shoes\r\n" \
      "Accept-Encoding: gzip, deflate, br, zstd\r\n" \
      "Accept-Language: en-GB,en-US;q=0.9,en;q=0.8,fr;q=0.7\r\n" \
      "Cookie: _shop_session=#{"a1B2c3D4" * 60}; _ga=GA1.2.1234567890.1700000000; _gid=GA1.2.987654321.1700000000; " \
      "cart_id=8f14e45fceea167a5a36dedd4bea2543; locale=en-GB; consent=analytics%3Dtrue%26ads%3Dfalse\r\n\r\n",
    "post_1k" => "POST /account/profile HTTP/1.1\r\n" \
      "Host: shop.example.com\r\n" \
      "X-Real-IP: 198.51.100.23\r\n" \
      "X-Forwarded-For: 198.51.100.23\r\n" \
      "X-Forwarded-Proto: https\r\n" \
      "Connection: close\r\n" \
      "Content-Length: 1024\r\n" \
      "Content-Type: application/x-www-form-urlencoded\r\n" \
      "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0\r\n" \
      "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n" \
      "Origin: https://shop.example.com\r\n" \
      "Cookie: _shop_session=#{"e5F6g7H8" * 30}\r\n\r\n" \
      "#{"authenticity_token=#{"x" * 86}&user%5Bname%5D=Ada+Lovelace&user%5Bbio%5D=".ljust(1024, "b")}"
  }.transform_values { |request| request.b.freeze }.freeze

  # herd: the head found as SocketReader finds it, Parser#parse, the body taken by Content-Length.
  class Herd
    def initialize
      @parser = ::Herd::HTTP::Parser.new
    end

    def parse(raw)
      head_end = raw.index("\r\n\r\n") + 4
      request = @parser.parse(raw.byteslice(0, head_end))
      body = request.content_length ? raw.byteslice(head_end, request.content_length) : ""
      [request.method, request.path, request.query, request.headers, body]
    end
  end

  # llhttp's callbacks, collecting what a server needs: the URL, header names
  # and values (a callback may deliver them in pieces), the body.
  module LLHttpCallbacks
    def on_message_begin
      @url = +""
      @fields = []
      @values = []
      @body = +""
      @complete = false
    end

    def on_url(data)
      @url << data
    end

    def on_header_field(data)
      if @fields.size > @values.size then @fields.last << data
      else @fields << data
      end
    end

    def on_header_value(data)
      if @values.size == @fields.size then @values.last << data
      else @values << data
      end
    end

    def on_body(data)
      @body << data
    end

    def on_message_complete
      @complete = true
    end
  end

  # llhttp with nothing more than the callbacks: its floor.
  class LLHttpRaw
    def initialize
      delegate_class = Class.new(LLHttp::Delegate) do
        include LLHttpCallbacks

        attr_reader :url, :fields, :values, :body
      end
      @delegate = delegate_class.new
      @parser = LLHttp::Parser.new(@delegate, type: :request)
    end

    def parse(raw)
      @parser << raw
      result = [@parser.method_name, @delegate.url, @delegate.fields, @delegate.values, @delegate.body]
      @parser.reset
      result
    end
  end

  # llhttp plus what a Rack server must still do with its output: env keys
  # (same cache as herd's), duplicates joined, PATH_INFO and QUERY_STRING.
  class LLHttpEnv < LLHttpRaw
    def initialize
      super
      @keys = {}
    end

    def parse(raw)
      method, url, fields, values, body = super
      headers = {}
      fields.each_with_index do |name, index|
        key = (@keys[name] ||= ::Herd::HTTP::Parser.env_key(name)) or next
        value = values[index]
        previous = headers[key]
        separator = (key == "HTTP_COOKIE") ? "; " : ", "
        headers[key] = previous ? "#{previous}#{separator}#{value}" : value
      end
      query = url.index("?")
      path = query ? url.byteslice(0, query) : url
      [method, path, query ? url.byteslice(query + 1, url.bytesize) : "", headers, body]
    end
  end

  VARIANTS = {"herd" => Herd, "llhttp + env" => LLHttpEnv, "llhttp callbacks only" => LLHttpRaw}.freeze

  module_function

  def llhttp_missing
    require "llhttp"
    nil
  rescue LoadError => e
    "llhttp not installed (bench group): #{e.message}"
  end

  # The llhttp C library version the gem bundles (the gem does not say it).
  def llhttp_c_version
    header = File.join(Gem.loaded_specs.fetch("llhttp").full_gem_path, "ext", "llhttp", "llhttp.h")
    File.read(header).scan(/#define LLHTTP_VERSION_(?:MAJOR|MINOR|PATCH) (\d+)/).join(".")
  rescue KeyError, SystemCallError
    "unknown"
  end

  # Runs in a fresh Ruby per mode; prints JSON: {request => {variant => [seconds per parse, ...]}}.
  # Repetitions are interleaved (herd, llhttp, herd, llhttp...) so that a
  # change in the machine's load hits every variant alike.
  def child(reps, iterations)
    variants = llhttp_missing ? VARIANTS.slice("herd") : VARIANTS
    check_equivalence(variants)
    results = REQUESTS.to_h do |name, raw|
      parsers = variants.transform_values(&:new)
      parsers.each_value { |parser| (iterations / 10).times { parser.parse(raw) } } # warm up (and let YJIT compile)
      timings = parsers.transform_values { [] }
      reps.times do
        parsers.each do |label, parser|
          GC.start
          started = Bench::Clock.now
          iterations.times { parser.parse(raw) }
          timings[label] << (Bench::Clock.now - started) / iterations
        end
      end
      [name, timings]
    end
    puts JSON.generate(yjit: !!(defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?), results: results)
  end

  # herd and llhttp + env must agree on every request, or the race is unfair.
  def check_equivalence(variants)
    return unless variants.key?("llhttp + env")

    REQUESTS.each do |name, raw|
      herd = Herd.new.parse(raw)
      llhttp = LLHttpEnv.new.parse(raw)
      raise "herd and llhttp disagree on #{name}:\n#{herd.inspect}\n#{llhttp.inspect}" unless herd == llhttp
    end
  end

  def run_mode(yjit, reps, iterations)
    args = [RbConfig.ruby, *(yjit ? ["--yjit"] : []), __FILE__, "--child", "--reps", reps.to_s, "--iterations", iterations.to_s]
    out, err, status = Open3.capture3(*args)
    raise "#{args.join(" ")} failed:\n#{err}" unless status.success?

    JSON.parse(out)
  end

  def yjit_available?
    _, _, status = Open3.capture3(RbConfig.ruby, "--yjit", "-e", "exit(RubyVM::YJIT.enabled? ? 0 : 1)")
    status.success?
  end

  # @return [Array<Hash>] per smuggling vector: whether herd and llhttp refuse it
  def strictness
    missing = llhttp_missing
    ::Herd::HTTPFixtures::MalformedRequests.smuggling.map do |fixture|
      {name: fixture[:name], herd: herd_status(fixture), llhttp: missing ? "skipped" : llhttp_verdict(fixture[:request])}
    end
  end

  def herd_status(fixture)
    client, server = UNIXSocket.pair
    handler = ::Herd::HTTP::Handler.new(->(_env) { [200, {}, ["accepted"]] }, ::Herd::HTTP::Options.new(read_timeout: 0.5, logger: ->(_) {}, **fixture[:options]))
    client.write(fixture[:request])
    client.close_write if fixture[:close_write]
    handler.call(server, remote_addr: "127.0.0.1", server_name: "localhost", server_port: 80).status
  ensure
    client&.close
    server&.close
  end

  def llhttp_verdict(request)
    delegate = Class.new(LLHttp::Delegate) { include LLHttpCallbacks }.new
    LLHttp::Parser.new(delegate, type: :request) << request
    delegate.instance_variable_get(:@complete) ? "accepted" : "accepted (incomplete)"
  rescue LLHttp::Error => e
    "refused (#{e.message[/HPE_\w+/]})"
  end
end

if ARGV.include?("--child")
  options = {reps: 5, iterations: 20_000}
  OptionParser.new do |opts|
    opts.on("--child")
    opts.on("--reps N", Integer) { |n| options[:reps] = n }
    opts.on("--iterations N", Integer) { |n| options[:iterations] = n }
  end.parse!
  HTTPParserBench.child(options[:reps], options[:iterations])
  exit
end

command = Bench::Report.command_line($PROGRAM_NAME, ARGV)
options = {reps: 5, iterations: 20_000}
OptionParser.new do |opts|
  opts.banner = "usage: ruby bench/http_parser.rb [options]"
  opts.on("--reps N", Integer, "repetitions (default 5, at least 3)") { |n| options[:reps] = [n, 3].max }
  opts.on("--iterations N", Integer, "parses per repetition (default 20000)") { |n| options[:iterations] = n }
end.parse!

env = Bench::Report.environment(command)
env[:llhttp] = HTTPParserBench.llhttp_missing ? "skipped: #{HTTPParserBench.llhttp_missing}" : "llhttp gem #{LLHttp::VERSION}, bundling llhttp C #{HTTPParserBench.llhttp_c_version}"
env[:loadavg_start] = Bench::Report.loadavg
env[:reps] = options[:reps]
env[:iterations] = options[:iterations]
warn "llhttp: #{env[:llhttp]}"

modes = {"interpreter" => false}
modes["YJIT"] = true if HTTPParserBench.yjit_available?
runs = modes.to_h do |label, yjit|
  warn "== #{label}"
  [label, HTTPParserBench.run_mode(yjit, options[:reps], options[:iterations])]
end

rows = []
data = {}
runs.each do |mode, run|
  run["results"].each do |request, variants|
    herd_median = Bench::Stats.median(variants.fetch("herd"))
    variants.each do |variant, seconds|
      stats = Bench::Stats.summary(seconds)
      data[[mode, request, variant].join("/")] = stats.merge(raw: seconds)
      rows << [mode, request, variant, format("%.2f", stats[:median] * 1e6), "#{format("%.2f", stats[:min] * 1e6)}–#{format("%.2f", stats[:max] * 1e6)}",
        (1 / stats[:median]).round.to_s.reverse.scan(/\d{1,3}/).join(",").reverse, format("%.2fx", stats[:median] / herd_median)]
    end
  end
end

env[:loadavg_end] = Bench::Report.loadavg
warn "== strictness"
verdicts = HTTPParserBench.strictness
herd_refused = verdicts.count { |v| v[:herd] != 200 }
llhttp_refused = verdicts.count { |v| v[:llhttp].start_with?("refused") }
strict_rows = verdicts.map { |v| [v[:name], (v[:herd] == 200) ? "accepted" : "refused (#{v[:herd]})", v[:llhttp]] }

markdown = <<~MD
  # HTTP request parser: herd (pure Ruby) vs llhttp (C)

  #{Bench::Report.environment_markdown(env)}- llhttp: #{env[:llhttp]}
  - load average (1/5/15 min) at start: #{env[:loadavg_start]}, at end: #{env[:loadavg_end]}
  - #{options[:iterations]} parses per repetition, #{options[:reps]} repetitions interleaved across parsers, median (min–max); each mode in a fresh Ruby

  Both parse a complete request from a String into method, PATH_INFO, QUERY_STRING, env-keyed
  headers (duplicates joined) and body; results are checked equal before timing. "llhttp + env" is
  what a Rack server built on llhttp would run; "callbacks only" is llhttp's floor (no env keys).
  Ratio: time per request relative to herd (below 1 = faster than herd).

  ## Speed

  #{Bench::Report.markdown_table(["mode", "request", "parser", "µs/request", "min–max µs", "requests/s", "vs herd"], rows)}
  ## Strictness on the request-smuggling corpus

  herd refuses #{herd_refused} of #{verdicts.size}; llhttp refuses #{llhttp_refused} of #{verdicts.size}.
  herd: the real handler over a socket pair (status answered); llhttp: the parser alone (the Host
  and HTTP/1.0 rules are a server's job and could be added around it; the others are inside the C
  state machine).

  #{Bench::Report.markdown_table(["vector", "herd", "llhttp"], strict_rows)}
MD
paths = Bench::Report.write("http_parser", markdown: markdown, data: {environment: env, timings: data, strictness: verdicts})
warn "wrote #{paths.join(" and ")}"
