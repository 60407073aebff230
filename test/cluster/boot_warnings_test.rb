# frozen_string_literal: true

require "test_helper"
require "support/server_harness"

# What the mold says about an app's boot: advice only where the user can
# follow it.
class ServerBootWarningsTest < Herd::Test
  APP = <<~RUBY
    reaper = Thread.new { sleep }
    reaper.thread_variable_set(:fork_safe, true)
    reaper.name = "Pool Reaper"
    Thread.new { sleep }.name = "metrics flusher"
    run ->(env) { [200, {}, ["ok"]] }
  RUBY

  # A stand-in for a concurrent-ruby executor (not in herd's bundle), in a
  # file of its own as the gem's: its worker thread begins next to the
  # check that starts it again after a fork.
  POOL_APP = <<~RUBY
    eval(<<~POOL, binding, "/gems/concurrent-ruby/lib/concurrent-ruby/concurrent/executor/ruby_thread_pool_executor.rb", 1)
      module Concurrent
        class RubyThreadPoolExecutor
          def post
            ns_reset_if_forked
            @thread ||= Thread.new { loop { sleep } }
          end

          private

          def ns_reset_if_forked
            @thread = nil unless @pid == Process.pid
            @pid = Process.pid
          end
        end
      end
    POOL
    Concurrent::RubyThreadPoolExecutor.new.post.name = "worker-1"
    Thread.new { sleep }.name = "metrics flusher"
    run ->(env) { [200, {}, ["ok"]] }
  RUBY

  # Turns YJIT on once the app is loaded, as docs/RAILS.md advises apps
  # other than Rails, and says in each response whether it is on.
  LATE_YJIT_APP = <<~RUBY
    RubyVM::YJIT.enable if defined?(RubyVM::YJIT) && RubyVM::YJIT.respond_to?(:enable)
    run ->(env) { [200, {}, [(defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?).to_s]] }
  RUBY

  EARLY_YJIT = /mold \(gen 0\): warning: YJIT was on before the app loaded/

  def teardown
    @server&.cleanup
  end

  # Ruby >= 3.3 built with YJIT can turn it on after the boot; there the
  # mold advises it when YJIT came on with the process. Elsewhere (3.1,
  # 3.2, a Ruby without YJIT) there is nothing to advise.
  def test_yjit_on_before_the_app_loaded_gets_advice_where_ruby_can_turn_it_on_later
    @server = Herd::ServerHarness.new(args: ["-w", "1"], env: {"RUBY_YJIT_ENABLE" => "1"})
    @server.ready
    advised = @server.lines.grep(EARLY_YJIT)
    if yjit_can_start_late?
      assert_equal 1, advised.size, "log:\n#{@server.lines.join}"
      assert_match(/unset RUBY_YJIT_ENABLE/, advised.first)
    else
      assert_empty advised
    end
  end

  def test_yjit_turned_on_by_the_app_gets_no_advice
    @server = Herd::ServerHarness.new(app: LATE_YJIT_APP, args: ["-w", "1"], env: {"RUBY_YJIT_ENABLE" => nil})
    @server.ready
    assert_empty @server.lines.grep(EARLY_YJIT)
    assert_equal yjit_can_start_late?.to_s, @server.body("/")
  end

  def test_threads_marked_fork_safe_get_no_advice
    @server = Herd::ServerHarness.new(app: APP, args: ["-w", "1"])
    @server.ready
    warning = @server.wait_for(/mold \(gen 0\): warning: (\d+) thread\(s\) started at boot \(([^)]*)\) will not exist in workers/)
    assert_equal ["1", "metrics flusher"], warning.captures
    refute_match(/Pool Reaper/, @server.lines.grep(/warning/).join)
  end

  def test_threads_of_a_fork_aware_pool_get_no_advice
    @server = Herd::ServerHarness.new(app: POOL_APP, args: ["-w", "1"])
    @server.ready
    warning = @server.wait_for(/mold \(gen 0\): warning: (\d+) thread\(s\) started at boot \(([^)]*)\) will not exist in workers/)
    assert_equal ["1", "metrics flusher"], warning.captures
  end

  private

  def yjit_can_start_late?
    !!(defined?(RubyVM::YJIT) && RubyVM::YJIT.respond_to?(:enable))
  end
end
