# frozen_string_literal: true

require_relative "support/app_scenario"
require "json"

# A Rails app (production, SQLite, a scaffold: Rails 8 as `rails new` makes
# it on Ruby >= 3.2, Rails 7.2 on 3.1) under `herd serve` with refork_after,
# through ten reforks, driven by what a browser does: the scaffold's form,
# its CSRF token and session cookie, the redirect, the record read back in
# HTML and JSON.
class RailsAppTest < Herd::Test
  include Herd::AppScenario

  # Rails 8.1 loads these on a worker's first request with a session cookie
  # (the serializer's format check) and its first INSERT of a string: the
  # mold loads them once for every worker, as docs/RAILS.md advises.
  RAILS8_CONFIG = <<~RUBY
    after_mold_fork do |server, mold|
      require "active_support/message_pack"
      require "active_support/multibyte/chars"
    end
  RUBY
  CONFIG = Herd::AppServer::RAILS8 ? RAILS8_CONFIG : ""

  def self.test_timeout
    300
  end

  def test_a_rails_app_through_ten_reforks
    serve_through_reforks(app: Herd::AppServer.rails_app, env: {"RAILS_ENV" => "production"}, workers: 2, reforks: 10, warmup: %w[/things /things/new /things.json],
      more_config: CONFIG, title: "Rails #{bundled_version("railties")} app under herd serve") { browse }
  end

  # The same with surge rollouts: each replacement forked, and warmed up at
  # nice 10, before the worker it replaces stops.
  def test_a_rails_app_through_reforks_with_surge_rollouts
    serve_through_reforks(app: Herd::AppServer.rails_app, env: {"RAILS_ENV" => "production"}, workers: 2, reforks: 3,
      warmup: %w[/things /things/new /things.json], more_config: "rollout_max_surge 1\nrollout_max_unavailable 0\nprepare_heap nice: 10\n#{CONFIG}",
      title: "Rails #{bundled_version("railties")} app under herd serve, rollout_max_surge 1") { browse }
  end

  # The same with `http keep_alive`: each visit on one connection, as a
  # browser keeps one, through the reforks (a worker that stops closes its
  # idle connections; Net::HTTP then reconnects).
  def test_a_rails_app_through_reforks_with_keep_alive
    @kept = 0
    serve_through_reforks(app: Herd::AppServer.rails_app, env: {"RAILS_ENV" => "production"}, workers: 2, reforks: 3,
      warmup: %w[/things /things/new /things.json], more_config: "http keep_alive: 5\n#{CONFIG}",
      more_checks: -> { check("responses that kept their connection", @kept.positive?, "#{@kept} of #{@requests.size}") },
      title: "Rails #{bundled_version("railties")} app under herd serve, keep_alive 5") do
      @server.session do |http|
        @session = http
        browse
      ensure
        @session = nil
      end
    end
  end

  private

  # One visitor: the new-thing form, its POST, the redirect, the JSON; every
  # fifth visit also the index as JSON and a POST without the token (422).
  def browse
    @iteration += 1
    name = "thing #{@run} #{@iteration}"
    cookies = {}
    token = request("GET /things/new") do |id|
      response = get("/things/new", id, cookies)
      expect response.code == "200", "status #{response.code}"
      response.body[/name="authenticity_token" value="([^"]+)"/, 1] || raise(Unexpected, "no authenticity_token in the form")
    end
    return unless token

    location = request("POST /things") do |id|
      response = post("/things", id, cookies, "authenticity_token" => token, "thing[name]" => name, "thing[notes]" => "made by request #{id}")
      expect response.code == "302", "status #{response.code}: #{response.body[0, 200]}"
      URI(response["location"]).path.tap { |path| expect path.match?(%r{\A/things/\d+\z}), "redirected to #{path}" }
    end
    return unless location

    request("GET #{location} (redirect)") do |id|
      response = get(location, id, cookies)
      expect response.code == "200", "status #{response.code}"
      expect response.body.include?(name), "the page does not show #{name.inspect}"
      expect response.body.include?("Thing was successfully created."), "no flash notice: the session cookie did not carry it"
    end
    request("GET #{location}.json") do |id|
      response = get("#{location}.json", id, cookies)
      expect response.code == "200", "status #{response.code}"
      thing = JSON.parse(response.body)
      expect thing["name"] == name && "/things/#{thing["id"]}" == location, "got #{thing.inspect}"
    end
    return unless (@iteration % 5).zero?

    request("GET /things.json") do |id|
      response = get("/things.json", id, cookies)
      expect response.code == "200", "status #{response.code}"
      expect JSON.parse(response.body).any? { |thing| thing["name"] == name }, "#{name.inspect} not in the index"
    end
    request("POST /things without the token (422 expected)") do |id|
      response = post("/things", id, cookies, "thing[name]" => "#{name} forged")
      expect response.code == "422", "status #{response.code}: CSRF protection did not refuse it"
    end
  end

  def get(path, id, cookies)
    remember(cookies, @server.http(:get, path, headers: headers(id, cookies), session: @session))
  end

  def post(path, id, cookies, form)
    remember(cookies, @server.http(:post, path, headers: headers(id, cookies), form: form, session: @session))
  end

  def headers(id, cookies)
    {"X-Request-Id" => id, "Cookie" => cookies.map { |name, value| "#{name}=#{value}" }.join("; ")}.reject { |_, v| v.empty? }
  end

  def remember(cookies, response)
    @kept += 1 if @session && !response["connection"]&.casecmp?("close")
    Array(response.get_fields("set-cookie")).each do |cookie|
      name, value = cookie.split(";", 2).first.split("=", 2)
      cookies[name] = value
    end
    response
  end

  # Rails tags each line with the X-Request-Id the test sent: every request
  # has its "Started" and "Completed" lines on herd's stdout.
  def check_log_lines
    log = @server.stdout_lines
    started = log.filter_map { |line| line[/\[(herd-[\w-]+)\] Started /, 1] }.tally
    completed = log.filter_map { |line| line[/\[(herd-[\w-]+)\] Completed /, 1] }.tally
    missing = @requests.reject { |r| started[r.id] && completed[r.id] }
    details = "#{@requests.size - missing.size}/#{@requests.size} requests have both lines in #{log.size} lines of stdout"
    details += "\nmissing (first 10): " + missing.first(10).map { |r| "#{r.id} #{r.label} (#{started[r.id] ? "Started" : "no Started"}, #{completed[r.id] ? "Completed" : "no Completed"})" }.join("; ") if missing.any?
    check("every request's Started and Completed lines on stdout", missing.empty?, details)
  end
end
