# frozen_string_literal: true

require "test_helper"
require "support/server_harness"
require "json"

class ServerOperationsTest < Herd::Test
  def teardown
    @server&.cleanup
  end

  HOOKS_CONFIG = <<~RUBY
    workers 1
    def record(*words) = File.open("hooks.log", "a") { |f| f.puts(words.join(" ")) }
    before_fork { |server, worker| record("before_fork", worker.number) }
    after_mold_fork { |server, mold| record("after_mold_fork", mold.generation) }
    after_fork { |server, worker| record("after_fork", worker.number, worker.generation) }
    after_worker_ready { |server, worker| record("after_worker_ready", worker.number) }
    after_request_complete { |server, worker, exchange| record("after_request_complete", exchange.status, exchange.target) }
    before_worker_exit { |server, worker| record("before_worker_exit", worker.number) }
    after_worker_exit { |server, worker, status| record("after_worker_exit", worker.number, status.exitstatus) }
    after_worker_ready { |server, worker| raise "hook failure on purpose" }
  RUBY

  def test_every_hook_runs_and_a_raising_hook_is_logged_and_contained
    @server = Herd::ServerHarness.new(config: HOOKS_CONFIG)
    assert_match(/200/, @server.get("/x?y=1").lines.first)
    @server.signal("QUIT")
    assert_equal 0, @server.wait.exitstatus
    log = File.read(File.join(@server.dir, "hooks.log")).lines(chomp: true)
    assert_equal ["after_mold_fork 0", "before_fork 0", "after_fork 0 0", "after_worker_ready 0",
      "after_request_complete 200 /x?y=1", "before_worker_exit 0", "after_worker_exit 0 0"], log
    @server.wait_for(/after_worker_ready hook \(herd\.rb:\d+\) raised; carrying on: RuntimeError: hook failure on purpose/)
    @server.wait_for(/    herd\.rb:\d+:in /) # the hook's own line, in its backtrace
  end

  def test_a_unix_socket_listener_with_umask
    @server = Herd::ServerHarness.new(config: %(workers 1\nlisten "unix:\#{Dir.pwd}/herd.sock", umask: 0o077\n))
    path = File.join(@server.dir, "herd.sock")
    @server.wait_for(/listening on unix:#{Regexp.escape(path)}/)
    @server.wait_for(/ready: 1 workers/)
    assert_equal 0o700, File.stat(path).mode & 0o777
    response = UNIXSocket.open(path) { |socket|
      socket.write("GET /unix HTTP/1.1\r\nHost: x\r\n\r\n")
      socket.read
    }
    assert_match(/path=\/unix/, response)
    @server.signal("QUIT")
    @server.wait
    refute File.exist?(path), "the socket file is removed at exit"
  end

  def test_ipv6_listener
    skip "no IPv6 loopback on this machine" unless Socket.ip_address_list.any?(&:ipv6_loopback?)
    @server = Herd::ServerHarness.new(args: ["-w", "1", "-l", "[::1]:0"])
    url = @server.wait_for(%r{listening on (http://\[::1\]:\d+)})[1]
    @server.ready
    port = Integer(url[/(\d+)\z/])
    response = TCPSocket.open("::1", port) { |socket|
      socket.write("GET /v6 HTTP/1.1\r\nHost: x\r\n\r\n")
      socket.read
    }
    assert_match(/path=\/v6/, response)
  end

  def test_systemd_socket_activation_and_notify
    listener = TCPServer.new("127.0.0.1", 0)
    notify = Socket.new(:UNIX, :DGRAM)
    notify_path = File.join(Dir.mktmpdir, "notify.sock")
    notify.bind(Socket.sockaddr_un(notify_path))
    # systemd sets LISTEN_PID to the service's pid: exec keeps the pid.
    wrapper = ["-e", 'ENV["LISTEN_PID"] = Process.pid.to_s; exec(*ARGV)']
    @server = Herd::ServerHarness.new(args: ["-w", "1"], env: {"LISTEN_FDS" => "1", "NOTIFY_SOCKET" => notify_path},
      command: [RbConfig.ruby, *wrapper], fds: {3 => listener})
    @server.wait_for(/listening \(systemd socket\) on http:\/\/127.0.0.1:#{listener.addr[1]}/)
    @server.wait_for(/ready: 1 workers/)
    assert_equal "READY=1\nSTATUS=1 workers", notify.recv(256)
    response = TCPSocket.open("127.0.0.1", listener.addr[1]) { |s|
      s.write("GET /sd HTTP/1.1\r\nHost: x\r\n\r\n")
      s.read
    }
    assert_match(/path=\/sd/, response)
    @server.signal("TERM")
    assert_equal "STOPPING=1", notify.recv(256)
  ensure
    listener&.close
    notify&.close
  end

  def test_access_log
    @server = Herd::ServerHarness.new(args: ["-w", "1", "--access-log", "access.log"])
    @server.get("/logged?a=b")
    @server.signal("QUIT")
    @server.wait
    line = File.read(File.join(@server.dir, "access.log"))
    assert_match(%r{\A127\.0\.0\.1 - - \[[^\]]+\] "GET /logged\?a=b HTTP/1.1" 200 \d+ \d+\.\d+\n\z}, line)
  end

  def test_config_errors_are_one_line
    @server = Herd::ServerHarness.new(config: "workers :many\n")
    assert_equal 1, @server.wait.exitstatus
    assert_equal ["herd: workers must be a whole number >= 0, got :many\n"], @server.lines
  end

  def test_unknown_heap_options_are_config_errors
    @server = Herd::ServerHarness.new(config: "prepare_heap seal: false\n")
    assert_equal 1, @server.wait.exitstatus
    assert_equal 1, @server.lines.size
    assert_match(/prepare_heap: unknown option seal; known: .*seal_malloc/, @server.lines.first)
  end

  def test_two_app_files_are_a_usage_error
    @server = Herd::ServerHarness.new(args: ["other.ru"])
    assert_equal 2, @server.wait.exitstatus
    assert_match(/serve takes one Rack app file/, @server.lines.join)
  end

  def test_a_missing_app_file_is_one_line
    _, err, status = herd_cli("serve", "nowhere.ru")
    assert_equal 1, status.exitstatus
    assert_equal 1, err.lines.size
    assert_match(%r{no Rack app file at .*/nowhere\.ru; pass one: herd serve path/to/config.ru}, err)
  end
end
