# frozen_string_literal: true

require "socket"
require "uri"
require "herd/linux"
require_relative "../support/clock"

module RailsBench
  # The load: CLIENTS processes (forked, so that they do not share a GVL),
  # each browsing the scaffold one request at a time on a new connection
  # (`Connection: close`, as ab does without -k), so CLIENTS requests are in
  # flight at any time, like `ab -c 4`. Each client repeats CYCLE: the form
  # (which gives it its session cookie and CSRF token), the index and show
  # pages as HTML and JSON, and a POST of the edit form (`_method=patch`, the
  # authenticity token, the cookie), which updates a record and redirects
  # (303) to the page it then shows, with its flash. Updates keep the table
  # at THINGS rows, so the index costs the same at the end as at the start.
  class Client
    CLIENTS = 4
    TIMEOUT = 60
    CYCLE = %i[new index show show_json update show index_json show show_json index].freeze
    EXPECTED = Hash.new(200).merge(update: 303).freeze
    MIX = CYCLE.tally.freeze

    # @param port [Integer]
    # @param ids [Array<Integer>] the records
    # @param requests [Integer, nil] in all (split between the clients), or nil to run until stop_path exists
    # @param stop_path [String, nil]
    # @param header [String, nil] a response header to record (bench/reload: x-release)
    def initialize(port:, ids:, requests: nil, stop_path: nil, header: nil, clients: CLIENTS)
      @port = port
      @ids = ids
      @requests = requests
      @stop_path = stop_path
      @header = header&.downcase
      @clients = clients
    end

    # Forks the clients; #wait collects what they measured.
    def start
      @readers = (0...@clients).map do |index|
        reader, writer = IO.pipe
        pid = fork do
          # Gone with the driver, however it ends (an INT to its pid alone
          # left four clients loading the next benchmark's server).
          Herd::Linux.parent_death_signal("KILL")
          reader.close
          Marshal.dump(Browser.new(@port, @ids, index, @header).run(share(index), @stop_path), writer)
          writer.close
          exit!(0)
        end
        writer.close
        [pid, reader]
      end
      self
    end

    # @return [Array<Array>] every request: [kind, status, start, seconds, header value or error]
    #   (start on CLOCK_MONOTONIC, the same clock as the driver's)
    def wait
      @readers.flat_map do |pid, reader|
        records = Marshal.load(reader.read)
        reader.close
        Process.wait(pid)
        records
      end
    end

    # Stops the clients at once (the driver is stopping on an error).
    def kill
      (@readers || []).each do |pid, reader|
        Process.kill("KILL", pid)
        Process.wait(pid)
        reader.close
      rescue SystemCallError, IOError
        nil
      end
    end

    private

    def share(index)
      return nil unless @requests

      @requests / @clients + ((index < @requests % @clients) ? 1 : 0)
    end

    # One client: a session cookie, a CSRF token, and the cycle.
    class Browser
      def initialize(port, ids, index, header)
        @port = port
        @ids = ids
        @index = index
        @header = header
        @cookie = nil
        @token = nil
        @step = 0
      end

      def run(count, stop_path)
        records = []
        until count ? records.size >= count : File.exist?(stop_path)
          kind = CYCLE[@step % CYCLE.size]
          kind = :new if @token.nil? # no token yet (or the form failed): get one first
          records << request(kind)
          @step += 1
        end
        records
      end

      private

      def request(kind)
        id = @ids[(@step * 7 + @index * 5) % @ids.size]
        method, path, body = case kind
        when :new then ["GET", "/things/new"]
        when :index then ["GET", "/things"]
        when :index_json then ["GET", "/things.json"]
        when :show then ["GET", "/things/#{@last_id || id}"]
        when :show_json then ["GET", "/things/#{id}.json"]
        when :update
          @last_id = id
          ["POST", "/things/#{id}", URI.encode_www_form("_method" => "patch", "authenticity_token" => @token,
            "thing[name]" => "thing #{id}", "thing[notes]" => "updated by client #{@index} at step #{@step}")]
        end
        @last_id = nil if kind == :show
        started = Bench::Clock.now
        head, status = exchange(method, path, body)
        seconds = Bench::Clock.now - started
        remember(head)
        extra = @header && head[/^#{@header}:\s*(.*?)\r?$/i, 1]
        [kind, status, started, seconds, extra]
      rescue SystemCallError, IOError, SocketError, Timeout => e
        [kind, 0, started, Bench::Clock.now - started, "#{e.class}: #{e.message}"[0, 200]]
      end

      class Timeout < StandardError; end

      # @return [Array] the response head, its status
      def exchange(method, path, body)
        socket = Socket.tcp("127.0.0.1", @port, connect_timeout: TIMEOUT)
        request = "#{method} #{path} HTTP/1.1\r\nHost: 127.0.0.1:#{@port}\r\nConnection: close\r\nAccept: */*\r\n"
        request << "Cookie: #{@cookie}\r\n" if @cookie
        if body
          request << "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: #{body.bytesize}\r\n"
        end
        request << "\r\n" << body.to_s
        socket.write(request)
        response = read_all(socket)
        head = response.split("\r\n\r\n", 2).first.to_s
        @page = response if method == "GET" && path == "/things/new"
        [head, head[/\AHTTP\/1\.\d (\d{3})/, 1].to_i]
      ensure
        socket&.close
      end

      def read_all(socket)
        deadline = Bench::Clock.now + TIMEOUT
        data = +""
        loop do
          chunk = socket.read_nonblock(65536, exception: false)
          case chunk
          when nil then return data
          when :wait_readable
            raise Timeout, "no response in #{TIMEOUT} s" unless socket.wait_readable([deadline - Bench::Clock.now, 0].max)
          else data << chunk
          end
        end
      end

      def remember(head)
        cookie = head[/^set-cookie:\s*([^;\r\n]+)/i, 1]
        @cookie = cookie if cookie
        if @page
          @token = @page[/<meta name="csrf-token" content="([^"]+)"/, 1] || @token
          @page = nil
        end
      end
    end
  end
end
