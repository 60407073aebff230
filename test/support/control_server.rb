# frozen_string_literal: true

require "fileutils"
require "support/control_client"
require "support/server_harness"

module Herd
  # Base class of the tests that run `herd serve` with a control endpoint
  # (control_listen) and read it: one way to start the server, to let the
  # requests it holds go, and to clean up after it.
  class ControlServerTest < Test
    include ControlClient

    def self.test_timeout
      90
    end

    def teardown
      @holder&.join(5)
      @server&.cleanup
    end

    # Starts the server with control_listen at `control` and waits until it
    # is ready and its endpoint is up.
    # @param config [String] more herd.rb
    # @return [String] the endpoint's address as the monitor logged it (also @address)
    def serve_with_control(control: "unix:herd.sock", app: ServerHarness::DEFAULT_APP, config: "")
      @server = ServerHarness.new(app: app, config: "control_listen #{control.inspect}\n#{config}")
      @server.ready
      @address = @server.wait_for(/monitor: control endpoint on (\S+)/)[1]
    end

    # Lets every request held by an app that waits for the file "release"
    # (`sleep 0.01 until File.exist?("release")`) finish.
    def release_held_requests
      FileUtils.touch(File.join(@server.dir, "release"))
    end
  end
end
