# frozen_string_literal: true

require_relative "support/app_scenario"
require "json"

# A Sinatra 4 app under `herd serve` with refork_after, through three
# reforks: JSON, a streamed body whose chunks the client reads as they come,
# a full and a partial rack hijack. The app prints one line per request on
# $stdout without flushing it.
class SinatraAppTest < Herd::Test
  include Herd::AppScenario

  def self.test_timeout
    300
  end

  def test_a_sinatra_app_through_three_reforks
    serve_through_reforks(app: Herd::AppServer.sinatra_app, env: {"RACK_ENV" => "production"}, workers: 3, reforks: 3, warmup: %w[/json],
      title: "Sinatra #{bundled_version("sinatra")} app under herd serve") { visit }
  end

  private

  def visit
    @iteration += 1
    request("GET /json") do |id|
      response = @server.http(:get, "/json?n=#{@iteration}", headers: {"X-Request-Id" => id})
      expect response.code == "200", "status #{response.code}"
      expect response["content-type"].start_with?("application/json"), "content-type #{response["content-type"]}"
      body = JSON.parse(response.body)
      expect body["id"] == id && body["params"] == {"n" => @iteration.to_s}, "got #{body.inspect}"
    end
    request("GET /stream") { |id| stream(id) }
    request("GET /hijack (full)") do |id|
      head, body = raw("GET /hijack HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: #{id}\r\n\r\n").split("\r\n\r\n", 2)
      expect head.start_with?("HTTP/1.1 200 OK\r\n"), "head #{head.inspect}"
      expect body.match?(/\Afully hijacked by \d+\n\z/), "body #{body.inspect}"
    end
    request("GET /partial_hijack") do |id|
      head, body = raw("GET /partial_hijack HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: #{id}\r\n\r\n").split("\r\n\r\n", 2)
      expect head.start_with?("HTTP/1.1 200 OK\r\n"), "head #{head.inspect}"
      expect body.match?(/\Apartially hijacked by \d+\n\z/), "body #{body.inspect}"
    end
  end

  def raw(text)
    socket = TCPSocket.new("127.0.0.1", @server.port)
    socket.write(text)
    socket.read
  ensure
    socket&.close
  end

  # Reads the chunked body chunk by chunk; after the first one, tells the app
  # (a file named after the request) that it arrived: the app writes the
  # second chunk only then, so the first one cannot have been held back.
  def stream(id)
    socket = TCPSocket.new("127.0.0.1", @server.port)
    socket.write("GET /stream HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: #{id}\r\n\r\n")
    head = +""
    head << socket.readline until head.end_with?("\r\n\r\n")
    expect head.start_with?("HTTP/1.1 200 OK\r\n"), "head #{head.inspect}"
    expect head.match?(/^transfer-encoding: chunked\r$/i), "not chunked: #{head.inspect}"
    chunks = []
    loop do
      size = Integer(socket.readline.chomp, 16)
      data = socket.read(size + 2)
      expect data&.end_with?("\r\n"), "chunk #{chunks.size} cut short: #{data.inspect}"
      break if size.zero?

      chunks << data.chomp("\r\n")
      File.write(File.join(@server.dir, "streamed-#{id}"), "") if chunks.size == 1
    end
    expect chunks.size == 3 && chunks[0].match?(/\Afirst chunk from \d+\n\z/) &&
      chunks[1] == "second chunk, after the client read the first\n" && chunks[2] == "last chunk\n", "chunks #{chunks.inspect}"
    expect socket.read == "", "bytes after the last chunk"
  ensure
    socket&.close
  end

  # Each request's "sinatra: ..." line, printed with $stdout.puts and never
  # flushed by the app, is in the stdout file.
  def check_log_lines
    log = @server.stdout_lines
    seen = log.filter_map { |line| line[/\Asinatra: \S+ \S+ id=(herd-[\w-]+) /, 1] }.tally
    missing = @requests.reject { |r| seen[r.id] }
    details = "#{@requests.size - missing.size}/#{@requests.size} requests have their line in #{log.size} lines of stdout"
    details += "\nmissing (first 10): " + missing.first(10).map { |r| "#{r.id} #{r.label}" }.join("; ") if missing.any?
    check("every request's line on stdout", missing.empty?, details)
  end
end
