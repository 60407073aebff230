# frozen_string_literal: true

require "sinatra/base"
require "json"

# The Sinatra app test/apps/sinatra_test.rb serves with `herd serve`: JSON, a
# streamed body, a full and a partial rack hijack. Each request prints one
# line on $stdout, never flushed: a worker that exits must not lose it.
class HerdSinatraApp < Sinatra::Base
  set :environment, :production

  before do
    $stdout.puts "sinatra: #{request.request_method} #{request.path} id=#{env["HTTP_X_REQUEST_ID"]} pid=#{Process.pid}"
  end

  get "/json" do
    content_type :json
    JSON.generate(pid: Process.pid, id: env["HTTP_X_REQUEST_ID"], params: params.to_h)
  end

  # Writes a first chunk, then waits (at most 10 s) for the client to say it
  # has read it, by creating a file named after the request: the second chunk
  # proves the first one left before the body ended.
  get "/stream" do
    seen = File.join(settings.root, "streamed-#{env["HTTP_X_REQUEST_ID"].to_s.delete("^a-zA-Z0-9-")}")
    stream do |out|
      out << "first chunk from #{Process.pid}\n"
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
      sleep 0.005 until File.exist?(seen) || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      out << (File.exist?(seen) ? "second chunk, after the client read the first\n" : "second chunk, the client never said it read the first\n")
      out << "last chunk\n"
    end
  end

  # Full hijack: the app takes the socket and writes the whole response.
  get "/hijack" do
    io = env["rack.hijack"].call
    body = "fully hijacked by #{Process.pid}\n"
    io.write("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: #{body.bytesize}\r\nconnection: close\r\n\r\n#{body}")
    io.close
    ""
  end

  # Partial hijack: the server writes the head, the callable the body.
  get "/partial_hijack" do
    headers "rack.hijack" => lambda { |io|
      io.write("partially hijacked by #{Process.pid}\n")
      io.close
    }
    ""
  end
end
