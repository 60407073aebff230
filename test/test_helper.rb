# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)

require "herd"
require "minitest/autorun"
require "rbconfig"
require "timeout"
require "open3"

module Herd
  # Raised inside a test that ran past its time limit, so a hang fails the
  # test instead of blocking CI.
  class TestTimeout < Exception; end # rubocop:disable Lint/InheritException -- must get past `rescue => e` in code under test

  # Base class of herd's tests: a per-test timeout and helpers for tests that fork.
  class Test < Minitest::Test
    ROOT = File.expand_path("..", __dir__)
    DEFAULT_TIMEOUT = Integer(ENV.fetch("HERD_TEST_TIMEOUT", 60))

    # Override in a test class that needs longer.
    def self.test_timeout
      DEFAULT_TIMEOUT
    end

    def run
      ::Timeout.timeout(self.class.test_timeout, TestTimeout, "#{self.class}##{name} ran past #{self.class.test_timeout}s") { super }
    end

    # What ruby_run and herd_cli take out of the environment: a Ruby of its
    # own, without Bundler. Under `bundle exec`, RUBYOPT made every
    # interpreter load bundler/setup and resolve the Gemfile (0.15-0.2 s
    # each, some 100 times a run) for code that needs only lib/ (-I), and
    # put the bundle's objects into heaps the fork tests measure (with the
    # bench group configured, bundler/setup alone moved a packed heap's first
    # GC copy from 1.6 to 5-7 MiB). A test that wants it passes it in `env:`.
    PLAIN_RUBY = {"RUBYOPT" => nil, "BUNDLE_GEMFILE" => nil}.freeze

    # Runs Ruby code in a fresh interpreter with lib/ on the load path.
    # @return [Array(String, String, Process::Status)] stdout, stderr, status
    def ruby_run(code, *args, env: {}, stdin_data: "")
      Open3.capture3(PLAIN_RUBY.merge(env), RbConfig.ruby, "-I", File.join(ROOT, "lib"), "-e", code, *args, stdin_data: stdin_data)
    end

    # Runs exe/herd with arguments.
    # @return [Array(String, String, Process::Status)]
    def herd_cli(*args, env: {}, chdir: Dir.pwd)
      Open3.capture3(PLAIN_RUBY.merge(env), RbConfig.ruby, "-I", File.join(ROOT, "lib"), File.join(ROOT, "exe", "herd"), *args,
        chdir: chdir)
    end

    # Kills a child this test forked and reaps it (nil: nothing was forked).
    def kill_and_reap(pid)
      return unless pid

      Process.kill(:KILL, pid)
      Process.wait(pid)
    end

    # Forks a child that runs the block and reports its value back over a pipe.
    # The child exits with exit! so this process's at_exit hooks never run twice.
    # @return [Object] what the block returned in the child (via Marshal)
    def in_child(fork_method: ->(&b) { Process.fork(&b) })
      reader, writer = IO.pipe
      pid = fork_method.call do
        reader.close
        Marshal.dump([:ok, yield], writer)
      rescue Exception => e # rubocop:disable Lint/RescueException -- report everything to the parent
        Marshal.dump([:error, "#{e.class}: #{e.message}"], writer)
      ensure
        writer.close
        exit!(0)
      end
      writer.close
      status, value = Marshal.load(reader)
      flunk "child failed: #{value}" if status == :error
      value
    ensure
      reader&.close
      Process.wait(pid) if pid
    end
  end
end
