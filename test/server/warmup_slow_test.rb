# frozen_string_literal: true

require "test_helper"
require "support/server_harness"
require "herd/server/config"

# `warmup`: a fresh mold sends its app GET requests before it forks the
# workers, so that what those requests build is shared, not built again in
# every worker.
class ServerWarmupSlowTest < Herd::Test
  APP = <<~RUBY
    CACHE = {}
    WARMED = []
    run lambda { |env|
      case env["PATH_INFO"]
      when "/fill"
        WARMED << Process.pid if env["herd.warmup"]
        CACHE[:filled_in] ||= Process.pid
        CACHE[:warmup_flag] ||= env["herd.warmup"].inspect
        CACHE[:host] ||= env["HTTP_HOST"]
        CACHE[:query] ||= env["QUERY_STRING"]
        [200, {}, ["filled"]]
      when "/boom" then raise "no database yet"
      else [200, {}, ["warmed_here=\#{WARMED.count(Process.pid)} filled_in=\#{CACHE[:filled_in]} me=\#{Process.pid} flag=\#{CACHE[:warmup_flag]} host=\#{CACHE[:host]} query=\#{CACHE[:query]}"]]
      end
    }
  RUBY

  def teardown
    @server&.cleanup
  end

  def test_the_mold_warms_the_app_up_and_its_workers_share_what_it_built
    @server = Herd::ServerHarness.new(app: APP, config: "workers 2\nwarmup \"/fill?x=1\", host: \"example.test\"\n")
    @server.ready
    line = @server.wait_for(/mold \(gen 0\): warm-up: GET \/fill\?x=1 200 \(\d+ ms; \d+ ms CPU, \d+ page faults\)/)
    assert line
    body = @server.get("/").split("\r\n\r\n", 2).last
    filled_in = body[/filled_in=(\d+)/, 1]
    worker = body[/me=(\d+)/, 1]
    refute_nil filled_in, body
    refute_equal worker, filled_in, "the worker should find the cache filled by the mold, not fill it itself"
    mold = @server.lines.join[/mold \(gen 0\), pid (\d+) ready/, 1]
    assert_equal mold, filled_in
    assert_includes body, "flag=true host=example.test query=x=1"
  end

  # Each new worker sends the warm-up too, before it reports ready, in
  # every generation; `workers: false` leaves it to the mold.
  def test_each_new_worker_warms_up_before_it_is_ready_unless_told_not_to
    @server = Herd::ServerHarness.new(app: APP, config: "workers 1\nwarmup \"/fill\"\n")
    @server.ready
    warmed = @server.wait_for(/worker 0 \(gen 0\): warm-up: GET \/fill 200 \(\d+ ms; \d+ ms CPU, \d+ page faults\)/)[0]
    ready = @server.wait_for(/worker 0 \(gen 0\), pid \d+ ready/)[0]
    assert_operator @server.lines.index { |line| line.include?(warmed) }, :<, @server.lines.index { |line| line.include?(ready) },
      "warmed up before it reported ready"
    assert_includes @server.get("/"), "warmed_here=1 "
    @server.signal("USR2")
    @server.wait_for(/worker 0 \(gen 1\): warm-up: GET \/fill 200/)
    pid = @server.wait_for(/worker 0 \(gen 1\), pid (\d+) ready/)[1]
    @server.wait_for(/worker 0 \(gen 0\), pid \d+ exited/)
    body = @server.get("/")
    assert_includes body, "me=#{pid} "
    assert_includes body, "warmed_here=1 "
    @server.cleanup
    @server = Herd::ServerHarness.new(app: APP, config: "workers 1\nwarmup \"/fill\", workers: false\n")
    @server.ready
    @server.wait_for(/mold \(gen 0\): warm-up: GET \/fill 200/)
    assert_includes @server.get("/"), "warmed_here=0 "
    assert_empty @server.lines.grep(/worker 0 \(gen 0\): warm-up/)
  end

  def test_a_warm_up_request_that_raises_is_logged_and_the_server_serves
    @server = Herd::ServerHarness.new(app: APP, config: "workers 1\nwarmup \"/boom\", \"/fill\"\n")
    @server.ready
    @server.wait_for(%r{warm-up: GET /boom raised RuntimeError: no database yet, GET /fill 200})
    assert_match(/200/, @server.get("/").lines.first)
  end

  # A worker runs its warm-up before it is ready: nothing the app raises,
  # its body's close included, may end its start.
  def test_a_body_whose_close_raises_does_not_end_the_warm_up
    require "rack"
    body = Object.new
    def body.each = yield("ok")
    def body.close = raise(IOError, "closed twice")
    line = Herd::Server::Warmup.new(["/a", "/b"]).run(->(_env) { [200, {}, body] })
    assert_match(/\Awarm-up: GET \/a 200, GET \/b 200 \(\d+ ms; \d+ ms CPU, \d+ page faults\)\z/, line)
  end

  def test_paths_must_be_paths
    error = assert_raises(Herd::ConfigError) { Herd::Server::Config.new.tap { |c| Herd::Server::Config::DSL.new(c).warmup("posts") } }
    assert_match(/warmup takes paths that start with \//, error.message)
    assert_raises(Herd::ConfigError) { Herd::Server::Config::DSL.new(Herd::Server::Config.new).warmup }
    error = assert_raises(Herd::ConfigError) { Herd::Server::Config::DSL.new(Herd::Server::Config.new).warmup("/", workers: :yes) }
    assert_equal "warmup workers: must be true or false, got :yes", error.message
  end
end
