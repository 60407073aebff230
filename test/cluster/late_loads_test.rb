# frozen_string_literal: true

require "test_helper"
require "support/server_harness"
require "herd/cluster/late_loads"
require "herd/server/rack_autoloads"

# Code loaded in a worker after its fork is loaded by every worker for
# itself: the worker says so once, and the mold loads the part of Rack that
# Rack would load on each worker's first form POST.
class LateLoadsTest < Herd::Test
  APP = <<~RUBY
    require "rack/request"
    LATE = File.join(ENV.fetch("LATE_DIR"), "late_lib.rb")
    run lambda { |env|
      require LATE if env["PATH_INFO"] == "/late"
      form = Rack::Request.new(env).POST if env["REQUEST_METHOD"] == "POST"
      [200, {}, ["form=\#{form.to_a.inspect} multipart=\#{defined?(Rack::Multipart::Parser).inspect}"]]
    }
  RUBY

  def teardown
    @server&.cleanup
  end

  def test_nothing_is_reported_while_nothing_is_loaded
    features = %w[a.rb b.rb]
    late = Herd::Cluster::LateLoads.new(features)
    assert_nil late.check
    assert_nil late.check
  end

  def test_features_taken_out_are_not_reported
    features = %w[a.rb b.rb c.rb]
    late = Herd::Cluster::LateLoads.new(features)
    features.pop
    assert_nil late.check
    features << "d.rb"
    assert_match(/\A1 file loaded after the fork, by this worker for itself \(d\.rb\)/, late.check)
  end

  def test_files_loaded_after_the_fork_are_reported_once
    features = %w[/gems/rack/lib/rack.rb]
    late = Herd::Cluster::LateLoads.new(features)
    features.push(*%w[/gems/rack-3/lib/rack/multipart.rb /gems/rack-3/lib/rack/multipart/parser.rb /app/lib/a.rb /app/lib/b.rb /x/c.rb])
    line = late.check
    assert_match(%r{\A5 files loaded after the fork, by this worker for itself \(rack/multipart\.rb, rack/multipart/parser\.rb, a\.rb, b\.rb, \.\.\.\): require them in the app or in config/herd\.rb, or reach them with a `warmup` request, so that the mold loads them once for every worker}, line)
    if RubyVM.stat.key?(:global_constant_state)
      assert_includes line, "every constant cache"
    else
      refute_includes line, "constant cache"
    end
    features << "/x/d.rb"
    assert_nil late.check, "once per worker"
  end

  def test_rack_multipart_is_loaded_once_and_the_switch_leaves_it_to_rack
    out, err, status = ruby_run(<<~RUBY)
      require "rack"
      require "herd/server/rack_autoloads"
      before = Rack.autoload?(:Multipart).nil? ? "loaded" : "autoload"
      off = Herd::Server::RackAutoloads.load(env: {"HERD_RACK_AUTOLOADS" => "0"})
      still = Rack.autoload?(:Multipart).nil? ? "loaded" : "autoload"
      line = Herd::Server::RackAutoloads.load(env: {})
      p [before, off, still, line, defined?(Rack::Multipart::Parser), Herd::Server::RackAutoloads.load(env: {})]
    RUBY
    assert status.success?, err
    before, off, still, line, parser, again = eval(out) # standard:disable Security/Eval
    assert_equal "autoload", before
    assert_nil off
    assert_equal "autoload", still
    assert_match(/\ARack::Multipart loaded now, not on each worker's first request \(Rack autoloads it; HERD_RACK_AUTOLOADS=0 leaves it to Rack\)\z/, line)
    assert_equal "constant", parser
    assert_nil again, "nothing left to load"
  end

  def test_without_rack_or_with_a_broken_autoload_nothing_happens
    out, err, status = ruby_run(<<~RUBY)
      require "herd/server/rack_autoloads"
      without = Herd::Server::RackAutoloads.load(env: {})
      module Rack; autoload :Multipart, "/nonexistent/rack/multipart"; end
      broken = Herd::Server::RackAutoloads.load(env: {})
      p [without, broken, Rack.autoload?(:Multipart)]
    RUBY
    assert status.success?, err
    without, broken, pending = eval(out) # standard:disable Security/Eval
    assert_nil without
    assert_nil broken
    assert_equal "/nonexistent/rack/multipart", pending, "left for the request that needs it"
  end

  # The after_worker_ready hooks load what the user chose to load per
  # worker; a worker's own warm-up loads like a request.
  def test_what_the_ready_hooks_load_is_not_counted_what_the_warm_up_loads_is
    features = %w[a.rb]
    late = Herd::Cluster::LateLoads.new(features)
    features << "warm_up.rb"
    late.excluding { features << "hook.rb" }
    assert_match(/\A1 file loaded after the fork, by this worker for itself \(warm_up\.rb\)/, late.check)
    features = %w[a.rb]
    late = Herd::Cluster::LateLoads.new(features)
    late.excluding { features << "hook.rb" }
    assert_nil late.check
    features = %w[a.rb b.rb]
    late = Herd::Cluster::LateLoads.new(features)
    features << "warm_up.rb"
    late.excluding { features.delete("a.rb") }
    assert_match(/\(warm_up\.rb\)/, late.check, "a hook that takes a feature out hides nothing")
    features = %w[a.rb b.rb]
    late = Herd::Cluster::LateLoads.new(features)
    late.excluding { features.delete("a.rb") }
    assert_nil late.check
    features << "late.rb"
    assert_match(/\(late\.rb\)/, late.check)
  end

  def test_a_worker_reports_what_it_loads_and_a_form_post_loads_nothing
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "late_lib.rb"), "LATE_LIB = 1\n")
      @server = Herd::ServerHarness.new(app: APP, config: "workers 1\n", env: {"LATE_DIR" => dir})
      @server.ready
      @server.wait_for(/mold \(gen 0\): Rack::Multipart loaded now/)
      response = @server.request("POST / HTTP/1.1\r\nHost: x\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: 3\r\nconnection: close\r\n\r\na=1")
      assert_includes response, %(form=[["a", "1"]] multipart="constant")
      assert_includes @server.get("/late"), "200"
      line = @server.wait_for(/worker 0 \(gen 0\): 1 file loaded after the fork, by this worker for itself \(.*late_lib\.rb\)/)
      assert line
      assert_includes @server.get("/late"), "200"
      @server.get("/")
      assert_equal 1, @server.lines.grep(/loaded after the fork/).size, "said once"
    end
  end
end
