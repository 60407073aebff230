# frozen_string_literal: true

require_relative "support/app_scenario"
require "json"
require "support/waiting"

# A Rails 8 app, as `rails new` makes it, run as its production setup runs
# it (its Dockerfile and Kamal): `bin/thrust` (Thruster, which listens on
# HTTP_PORT and gives the command it runs PORT=TARGET_PORT) in front of
# `bundle exec herd serve`, jemalloc preloaded, stdout to a file. Kamal
# checks /up and stops the container with TERM, then KILL after 30 s.
# Ruby >= 3.2 only (rakelib/apps.rake leaves it out on 3.1).
class Rails8DeployTest < Herd::Test
  # Kamal's stop timeout (`docker stop -t 30`).
  KAMAL_STOP_TIMEOUT = 30
  PIDFILE = "tmp/pids/herd.pid"
  JEMALLOC = "libjemalloc.so.2"

  # config/herd.rb as docs/RAILS.md gives it, and one hook of the test's
  # own: it writes the cache until Solid Cache's expiry starts its
  # background pool in the mold (as an app's cached pages do), so that the
  # mold's thread check meets that pool every time.
  CONFIG = <<~RUBY
    workers 2
    pidfile "#{PIDFILE}"
    warmup "/up", "/things"
    after_mold_fork do |server, mold|
      require "active_support/message_pack"
      require "active_support/multibyte/chars"
      pool = Rails.cache.instance_variable_get(:@background)
      writes = 0
      Rails.cache.write("herd-test-\#{writes += 1}", writes) until pool.length.positive? || writes == 10_000
      warn "herd test: Solid Cache's background pool has \#{pool.length} thread(s) after \#{writes} cache writes"
    end
  RUBY

  def self.test_timeout
    240
  end

  def teardown
    @poller&.kill
    @server&.cleanup
  end

  def test_thruster_in_front_of_herd_with_jemalloc_serves_reforks_reloads_and_stops_on_term
    assert Herd::AppServer::RAILS8, "Rails 8 needs Ruby >= 3.2 (this is #{RUBY_VERSION})"
    assert jemalloc_installed?, "#{JEMALLOC} not found: run test/apps/setup (it installs libjemalloc2)"
    start_behind_thruster
    check_the_app_as_generated
    check_boot_log
    check_requests_go_through_thruster

    polls = poll_up do
      refork
      reload
    end
    puts "\n== Rails #{Herd::AppServer.rails_version} behind Thruster, jemalloc preloaded: GET /up answers by phase " \
      "#{polls.map(&:first).tally.inspect}, statuses #{polls.map(&:last).tally.inspect}"
    assert_equal [200], polls.map(&:last).uniq, "GET /up through a refork and a reload: #{polls.reject { |_, result| result == 200 }.first(5).inspect}"
    %i[refork reload].each { |phase| assert polls.any? { |during, _| during == phase }, "no GET /up answered during the #{phase}" }

    stop_with_term
  end

  private

  def jemalloc_installed?
    Dir["/usr/lib/*/#{JEMALLOC}", "/usr/lib/#{JEMALLOC}", "/usr/local/lib/#{JEMALLOC}"].any?
  end

  # Thruster and herd on ports found free; tried again on other ports when
  # one was taken meanwhile (another server on this machine).
  def start_behind_thruster(attempts: 3)
    attempts.times do |attempt|
      @http_port, @target_port = free_port, free_port
      @server = Herd::AppServer.new(app: Herd::AppServer.rails_app, config: CONFIG, config_path: "config/herd.rb",
        env: {"RAILS_ENV" => "production", "HTTP_PORT" => @http_port.to_s, "TARGET_PORT" => @target_port.to_s, "LD_PRELOAD" => JEMALLOC},
        command: ["bin/thrust", "bundle", "exec", "herd", "serve"], port: @http_port, pidfile: PIDFILE, stop_signal: :TERM)
      @server.wait_for(/monitor: ready: 2 workers serving/)
      return wait_until_thruster_listens
    rescue Minitest::Assertion => e
      raise unless e.message.match?(/address already in use/i) && attempt < attempts - 1

      @server = nil
    end
  end

  def free_port
    server = TCPServer.new("127.0.0.1", 0)
    server.addr[1]
  ensure
    server&.close
  end

  def wait_until_thruster_listens(timeout: 30)
    Herd::Waiting.wait_until("Thruster listening on #{@http_port}", timeout: timeout, interval: 0.05,
      detail: -> { "stdout:\n#{@server.stdout_lines.join}" }) do
      raise Minitest::Assertion, "Thruster exited (#{@server.reap.inspect}); stdout:\n#{@server.stdout_lines.join}" if @server.reap

      Herd::Procfs.listening?(@http_port)
    end
  end

  # What `rails new` gave the app: Solid Queue configured as its job backend,
  # Thruster's binstub, the Dockerfile that runs it in front of the server.
  def check_the_app_as_generated
    %w[config/queue.yml config/recurring.yml db/queue_schema.rb bin/jobs bin/thrust Dockerfile].each do |path|
      assert File.file?(File.join(@server.dir, path)), "rails new wrote no #{path}"
    end
    production = File.read(File.join(@server.dir, "config", "environments", "production.rb"))
    assert_match(/^\s*config\.active_job\.queue_adapter = :solid_queue$/, production)
    assert_match(/^\s*config\.cache_store = :solid_cache_store$/, production)
    assert_match(%r{CMD \["\./bin/thrust"}, File.read(File.join(@server.dir, "Dockerfile")))
  end

  # herd read PORT from Thruster; jemalloc made its malloc steps step aside,
  # and the log says why; Solid Cache's pool brought no advice about threads.
  def check_boot_log
    log = @server.lines.join
    assert_match(/monitor: settings: config file config\/herd\.rb, listeners from PORT/, log)
    assert_equal @target_port, @server.herd_port
    assert_match(/mold \(gen 0\): heap prepared.*malloc's free chunks left alone: malloc is not glibc's/, log)
    assert_match(/herd test: Solid Cache's background pool has [1-9]\d* thread\(s\)/, log)
    refute_match(/thread\(s\) started at boot/, log)
  end

  # Thruster logs each request it proxied on stdout, one JSON object a line.
  def check_requests_go_through_thruster
    assert_equal "200", @server.http(:get, "/things").code
    assert_equal "200", @server.http(:get, "/up").code
    proxied = @server.stdout_lines.filter_map { |line| parse_json(line) }
    assert proxied.any? { |entry| entry["path"] == "/things" && entry["status"] == 200 }, "Thruster logged no GET /things:\n#{@server.stdout_lines.first(20).join}"
  end

  # @return [Hash, nil] a line of Thruster's log; nil for Rails' lines
  def parse_json(line)
    JSON.parse(line) if line.start_with?("{")
  rescue JSON::ParserError
    nil
  end

  # GET /up through Thruster, one after the other on fresh connections, as
  # Kamal's proxy checks it, while the block runs.
  # @return [Array<Array(Symbol, Object)>] the phase at each answer, and its status (or the error)
  def poll_up
    results = Queue.new
    @phase = :before
    stop = false
    @poller = Thread.new do
      results << [@phase, up_status] until stop
    end
    yield
    stop = true
    @poller.join(30)
    Array.new(results.size) { results.pop }
  end

  # @return [Integer, String] the status of GET /up, or the error
  def up_status
    Integer(@server.http(:get, "/up").code)
  rescue => e
    "#{e.class}: #{e.message}"
  end

  # USR2 to the monitor (its pid from the pidfile herd wrote): a worker is
  # promoted and generation 1 replaces generation 0.
  def refork
    @phase = :refork
    mark = @server.mark
    Process.kill(:USR2, @server.pidfile_pid)
    @server.wait_for(/refork \(USR2\): promoting worker \d+ \(gen 0\)/, after: mark)
    roll_to(1, mark)
  end

  # HUP: a fresh mold boots from config.ru and generation 2 replaces 1.
  def reload
    @phase = :reload
    mark = @server.mark
    Process.kill(:HUP, @server.pidfile_pid)
    @server.wait_for(/HUP: booting mold \(gen 2\)/, after: mark)
    roll_to(2, mark)
    @phase = :after
  end

  def roll_to(generation, mark)
    @server.wait_for(/monitor: mold \(gen #{generation}\), pid \d+ ready/, after: mark, timeout: 90)
    2.times { |number| @server.wait_for(/monitor: worker #{number} \(gen #{generation}\), pid \d+ ready/, after: mark, timeout: 90) }
    2.times { |number| @server.wait_for(/monitor: worker #{number} \(gen #{generation - 1}\), pid \d+ exited/, after: mark, timeout: 90) }
  end

  # TERM to Thruster, as `docker stop` sends it: it passes TERM on, herd
  # stops gracefully, and Thruster exits 0 within Kamal's timeout, leaving
  # no process and no listener behind.
  def stop_with_term
    pids = @server.logged_pids
    status = @server.stop(timeout: KAMAL_STOP_TIMEOUT)
    assert status.respond_to?(:success?) && status.success?, "Thruster exited with #{status.inspect}; log:\n#{@server.lines.last(10).join}"
    assert @server.lines.any? { |line| line.include?("monitor: stopped") }, "herd did not stop gracefully:\n#{@server.lines.last(10).join}"
    refute_match(/thread\(s\) started at boot/, @server.lines.join, "a mold warned about threads (the reload's included)")
    assert_equal [], pids.select { |pid| Herd::Procfs.alive?(pid) }, "left after TERM"
    [@http_port, @target_port].each { |port| refute Herd::Procfs.listening?(port), "something still listens on #{port}" }
  end
end
