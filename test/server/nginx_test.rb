# frozen_string_literal: true

require "test_helper"
require "support/server_harness"
require "digest"

# Debian's nginx in front of herd, with examples/nginx.conf (paths filled in).
# .ci/run installs nginx; without it this test fails and says how to get it.
class ServerNginxTest < Herd::Test
  APP = <<~RUBY
    require "digest"
    run ->(env) {
      body = env["rack.input"].read
      text = "\#{env["REQUEST_METHOD"]} \#{env["PATH_INFO"]} \#{body.bytesize} \#{Digest::SHA256.hexdigest(body)} \#{env["HTTP_X_FORWARDED_FOR"]}"
      [200, {"content-type" => "text/plain"}, [text]]
    }
  RUBY

  def setup
    @nginx_bin = ENV.fetch("NGINX", "/usr/sbin/nginx")
    flunk "nginx is not installed: apt-get install -y nginx (bin/setup does it)" unless File.executable?(@nginx_bin)
  end

  def teardown
    stop_nginx
    @server&.cleanup
  end

  def test_requests_and_bodies_pass_through_nginx
    @server = Herd::ServerHarness.new(app: APP, config: %(workers 2\nlisten "unix:\#{Dir.pwd}/herd.sock"\n))
    @server.ready
    port = start_nginx(File.join(@server.dir, "herd.sock"))

    get = http(port, "GET /through/nginx HTTP/1.1\r\nHost: example.test\r\n\r\n")
    assert_match(%r{\AHTTP/1.1 200}, get)
    assert_match(%r{GET /through/nginx 0 #{Digest::SHA256.hexdigest("")} 127.0.0.1}, get)

    body = Random.new(7).bytes(300_000) # above herd's spool threshold: a tempfile
    post = http(port, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: #{body.bytesize}\r\n\r\n#{body}")
    assert_match(/POST \/upload 300000 #{Digest::SHA256.hexdigest(body)}/, post)

    chunked = "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    response = http(port, "POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n#{chunked}")
    assert_match(/POST \/chunked 11 #{Digest::SHA256.hexdigest("hello world")}/, response)
  end

  private

  def start_nginx(socket_path)
    @nginx_dir = Dir.mktmpdir("herd-nginx")
    port = TCPServer.open("127.0.0.1", 0) { |server| server.addr[1] }
    conf = File.read(File.join(ROOT, "examples", "nginx.conf"))
      .sub("unix:/run/herd/herd.sock", "unix:#{socket_path}")
      .sub("/run/herd/nginx.pid", File.join(@nginx_dir, "nginx.pid"))
      .sub("listen 8080;", "listen 127.0.0.1:#{port};")
      .sub("http {", "http {\n  client_body_temp_path #{@nginx_dir}/body;\n  proxy_temp_path #{@nginx_dir}/proxy;\n" \
        "  fastcgi_temp_path #{@nginx_dir}/fcgi;\n  uwsgi_temp_path #{@nginx_dir}/uwsgi;\n  scgi_temp_path #{@nginx_dir}/scgi;")
    conf = "user root;\n#{conf}" if Process.uid.zero? # the workers must reach herd's socket in our tmpdir
    File.write(File.join(@nginx_dir, "nginx.conf"), conf)
    @nginx = Herd::ServerProcess.new([@nginx_bin, "-p", @nginx_dir, "-c", File.join(@nginx_dir, "nginx.conf"), "-g", "daemon off;"],
      dir: @nginx_dir, logs: {out: "stdout.log", err: "error.log"})
    # nginx logs no line once it listens: its port tells.
    Herd::Waiting.wait_until("nginx listening", timeout: 15, detail: -> { "error.log:\n#{@nginx.lines.join}" }) do
      Herd::Procfs.listening?(port)
    end
    port
  end

  # No half-close: nginx takes a client that shut its writing side for gone.
  def http(port, raw)
    TCPSocket.open("127.0.0.1", port) do |socket|
      socket.write(raw.sub("\r\n", "\r\nConnection: close\r\n"))
      socket.read
    end
  end

  def stop_nginx
    @nginx&.cleanup(grace: 10)
  ensure
    FileUtils.rm_rf(@nginx_dir) if @nginx_dir
  end
end
