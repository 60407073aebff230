# frozen_string_literal: true

require "socket"
require "herd/clock"

module Herd
  # A load generator for the fault-injection suite: a few client threads,
  # each sending one GET at a time on a fresh connection (herd closes after
  # every response) and recording what happened to it. Times are
  # CLOCK_MONOTONIC, which is system-wide on Linux: they compare with the
  # times the app and the test record in other processes.
  class FaultLoad
    # One request: its id, path, when it started and ended, and what came of
    # it (ok with the pid that answered, or the error).
    Request = Struct.new(:id, :client, :path, :started, :ended, :status, :pid, :error, keyword_init: true) do
      def ok?
        error.nil?
      end

      def to_s
        outcome = ok? ? "200 from pid #{pid}" : error
        format("request %d (client %d, %s, %.3f..%.3f): %s", id, client, path, started, ended, outcome)
      end
    end

    READ_TIMEOUT = 15

    attr_reader :requests

    # @param port [Integer]
    # @param clients [Integer] concurrent clients
    # @param path [Proc] id -> the path to ask for
    # @param think [Float] each client pauses up to this long (random) between requests
    def initialize(port:, clients: 4, path: ->(id) { "/work/#{id}/20" }, think: 0)
      @port = port
      @think = think
      @clients = clients
      @path = path
      @requests = []
      @lock = Mutex.new
      @next_id = 0
      @stop = false
    end

    def start
      @threads = Array.new(@clients) { |client| Thread.new { run(client) } }
      self
    end

    # Stops the clients once their current request is done.
    # @return [Array<Request>]
    def stop
      @stop = true
      @threads&.each(&:join)
      @requests
    end

    # Blocks until `count` more requests completed (or the deadline).
    def wait_for_requests(count, timeout: 20)
      target = completed + count
      deadline = Clock.now + timeout
      sleep 0.01 while completed < target && Clock.now < deadline
      completed >= target
    end

    def completed
      @lock.synchronize { @requests.size }
    end

    def failures
      @lock.synchronize { @requests.reject(&:ok?) }
    end

    private

    def run(client)
      until @stop
        id = @lock.synchronize { @next_id += 1 }
        request = one(id, client)
        @lock.synchronize { @requests << request }
        sleep(rand * @think) if @think.positive?
      end
    end

    def one(id, client)
      path = @path.call(id)
      started = Clock.now
      request = Request.new(id: id, client: client, path: path, started: started)
      socket = Socket.tcp("127.0.0.1", @port, connect_timeout: 5)
      socket.write("GET #{path} HTTP/1.1\r\nHost: localhost\r\n\r\n")
      response = read_all(socket)
      request.ended = Clock.now
      judge(request, response)
    rescue SystemCallError, IOError, SocketError => e
      request.ended = Clock.now
      request.error = "#{e.class}: #{e.message}"
      request
    ensure
      socket&.close
    end

    def read_all(socket)
      response = +""
      deadline = Clock.now + READ_TIMEOUT
      loop do
        chunk = socket.read_nonblock(16_384, exception: false)
        case chunk
        when nil then return response
        when :wait_readable
          remaining = deadline - Clock.now
          raise IOError, "no complete response within #{READ_TIMEOUT}s" if remaining <= 0

          socket.wait_readable(remaining)
        else
          response << chunk
        end
      end
    end

    def judge(request, response)
      request.status = response[%r{\AHTTP/1\.1 (\d{3})}, 1]&.to_i
      request.pid = response[/^pid=(\d+)/, 1]&.to_i
      if response.empty?
        request.error = "connection closed without a response"
      elsif request.status != 200 || request.pid.nil?
        request.error = "unexpected response: #{response[0, 200].inspect}"
      end
      request
    end
  end
end
