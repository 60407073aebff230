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

  def teardown
    @server&.cleanup
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
end
