# frozen_string_literal: true

require "rbconfig"
require "tmpdir"
require "support/server_process"

module Herd
  # `exe/herd serve` of this checkout, run by a ServerProcess in a tmpdir
  # holding the test's config.ru (and herd.rb), listening on a port the
  # kernel picks. The tmpdir goes in #cleanup.
  class ServerHarness < ServerProcess
    DEFAULT_APP = <<~RUBY
      run ->(env) { [200, {"content-type" => "text/plain"}, ["pid=\#{Process.pid} path=\#{env["PATH_INFO"]}\\n"]] }
    RUBY

    # A worker that serves GET /unsafe is no longer fork safe.
    FORK_UNSAFE_APP = <<~RUBY
      run ->(env) {
        Herd.no_longer_fork_safe!("opened a gRPC channel") if env["PATH_INFO"] == "/unsafe"
        [200, {}, ["ok"]]
      }
    RUBY

    # @param app [String] config.ru source
    # @param config [String, nil] herd.rb source
    # @param args [Array<String>] more `herd serve` arguments
    # @param command [Array<String>] what runs exe/herd (a wrapper, for systemd's LISTEN_PID)
    # @param options [Hash] for ServerProcess (env:, fds:, logs:, redirect:)
    def initialize(app: DEFAULT_APP, config: nil, args: [], command: [RbConfig.ruby], **options)
      dir = Dir.mktmpdir("herd-serve")
      File.write(File.join(dir, "config.ru"), app)
      arguments = ["serve", "config.ru", *args]
      # A listener given as a flag replaces the file's: with listeners of
      # its own, the file gets the test's one too (first, for #ready).
      if config&.match?(/^\s*listen\b/)
        config = "listen '127.0.0.1:0'\n#{config}"
      else
        arguments += ["-l", "127.0.0.1:0"]
      end
      if config
        File.write(File.join(dir, "herd.rb"), config)
        arguments += ["-c", "herd.rb"]
      end
      # A wrapper command gets "ruby exe/herd ..." as its arguments to exec.
      herd = ((command.size > 1) ? [RbConfig.ruby] : []) + ["-I", File.join(Test::ROOT, "lib"), File.join(Test::ROOT, "exe", "herd")]
      super([*command, *herd, *arguments], dir: dir, **options)
    end

    # With FORK_UNSAFE_APP and one worker: makes it fork-unsafe, and waits
    # until the monitor knows.
    def make_worker_unsafe
      get("/unsafe")
      wait_for(/worker 0 \(gen 0\), pid \d+ is no longer fork safe \(opened a gRPC channel\)/)
    end

    # Kills every process it started (ServerProcess#cleanup), then removes the tmpdir.
    def cleanup(**options)
      super
    ensure
      FileUtils.rm_rf(dir)
    end
  end

  # For a test class that runs one server per test: `serve` starts it and
  # waits until it is ready; teardown cleans it up.
  module ServerTest
    def teardown
      @server&.cleanup
      super
    end

    def serve(**options)
      @server = ServerHarness.new(**options)
      @server.ready
      @server
    end

    # USR2, then waits for the new mold and its first `workers` workers.
    def refork_to(generation, workers: 1)
      @server.signal("USR2")
      @server.wait_for(/mold \(gen #{generation}\), pid \d+ ready/)
      workers.times { |number| @server.wait_for(/worker #{number} \(gen #{generation}\), pid \d+ ready/) }
    end

    # @return [Array<Array(Integer, String)>] each live descendant's parent
    #   pid and title, without its request count
    def titles
      tree = Herd::Memory::ProcessTree.new
      # Not zombies: the middle process of a mold's double fork may not be
      # reaped yet when the worker it forked reports ready.
      @server.descendants.select { |pid| Herd::Procfs.alive?(pid) }
        .map { |pid| [tree.ppid(pid), tree.title(pid).sub(/ requests=\d+/, "")] }
    end
  end
end
