# frozen_string_literal: true

require "fileutils"
require "forwardable"
require "net/http"
require "open3"
require "socket"
require "tmpdir"
require "uri"
require "support/server_process"

module Herd
  # A real app under `herd serve`, started the way a user would: `bundle
  # exec herd serve` with the apps bundle of this Ruby (test/apps/rails8/Gemfile
  # on Ruby >= 3.2, Rails 8; test/apps/Gemfile on 3.1, Rails 7.2), in a copy of
  # the app's directory. The server's stdout and stderr go to files (not a pipe
  # that a reader thread drains): what the workers buffered and never wrote
  # is missing from the files, as it would be from a log file in production.
  #
  # A ServerProcess runs it: the pid it spawned is the monitor (or what runs
  # it: Thruster), in a process group of its own that #cleanup kills whole.
  # Every other pid it knows comes from the monitor's own log or from a
  # pidfile the test's config named.
  class AppServer
    APPS = File.expand_path("..", __dir__)
    # Rails 8 needs Ruby 3.2; Ruby 3.1 keeps Rails 7.2 and its bundle.
    RAILS8 = Gem::Version.new(RUBY_VERSION) >= Gem::Version.new("3.2")
    GEMFILE = RAILS8 ? File.join(APPS, "rails8", "Gemfile") : File.join(APPS, "Gemfile")
    GENERATOR = RAILS8 ? File.join(APPS, "rails8", "generate.rb") : File.join(APPS, "rails", "generate.rb")
    ROOT = File.expand_path("../../..", __dir__)
    LISTENING = /monitor: listening on (?:http:\/\/)?(?:127\.0\.0\.1|0\.0\.0\.0):(\d+)/
    # "mold (gen 1), pid 123 ready", "worker 0 (gen 1), pid 124 ready"
    READY = /monitor: (mold|worker (\d+)) \(gen (\d+)\), pid (\d+) ready/
    # "worker 0 (gen 1), pid 124 ready", and the writer of each line: "herd[123] monitor: ..."
    PID = /\bpid (\d+)\b|\bherd\[(\d+)\]/

    class << self
      # The environment of a command run with the apps bundle: the test's own
      # bundle (herd's Gemfile, under `bundle exec rake`) taken out.
      def env(extra = {})
        base = defined?(::Bundler) ? ::Bundler.unbundled_env : ENV.to_h
        # Unset what base left out (BUNDLER_VERSION, RUBYOPT): a spawn without
        # unsetenv_others would otherwise inherit the test's own bundle.
        removed = (ENV.keys - base.keys).to_h { |key| [key, nil] }
        removed.merge(base).merge("BUNDLE_GEMFILE" => GEMFILE).merge(extra)
      end

      # Fails the calling test with what to run when the apps bundle is missing.
      def check_bundle!
        out, status = Open3.capture2e(env, "bundle", "check", chdir: APPS)
        return if status.success?

        raise Minitest::Assertion, "the apps bundle is not installed: run test/apps/setup\n#{out}"
      end

      # The Rails app's directory, generated on first use (GENERATOR).
      def rails_app
        @rails_app ||= begin
          check_bundle!
          out, err, status = Open3.capture3(env, "bundle", "exec", "ruby", GENERATOR, chdir: ROOT)
          raise Minitest::Assertion, "generating the Rails app failed:\n#{err}" unless status.success?

          out.lines.last.chomp
        end
      end

      # @return [String] the railties version of this Ruby's apps bundle
      def rails_version
        File.read("#{GEMFILE}.lock")[/^    railties \(([^)]+)\)/, 1]
      end

      def sinatra_app
        check_bundle!
        File.join(APPS, "sinatra")
      end
    end

    extend Forwardable

    # The spawn, the log and the waits are its ServerProcess's.
    def_delegators :@process, :pid, :lines, :stdout_lines, :mark, :wait_for

    attr_reader :dir, :port, :herd_port

    # @param app [String] directory copied into a fresh tmpdir
    # @param config [String] herd.rb
    # @param env [Hash] more environment
    # @param command [Array<String>] what starts the server (default: herd serve with -c herd.rb)
    # @param config_path [String] where the config goes, relative to the app
    # @param port [Integer, nil] where requests go, when not to herd's own port (a proxy's)
    # @param pidfile [String, nil] the config's pidfile, relative to the app
    # @param stop_signal [Symbol] what stops the spawned process gracefully
    def initialize(app:, config:, env: {}, command: nil, config_path: "herd.rb", port: nil, pidfile: nil, stop_signal: :QUIT)
      @dir = Dir.mktmpdir("herd-app")
      FileUtils.cp_r(File.join(app, "."), @dir)
      File.write(File.join(@dir, config_path), config)
      command ||= ["bundle", "exec", "herd", "serve", "config.ru", "-c", "herd.rb", "-l", "127.0.0.1:0"]
      @pidfile = pidfile && File.join(@dir, pidfile)
      @stop_signal = stop_signal
      @pidfile_pids = []
      @process = ServerProcess.new(command, dir: @dir, env: self.class.env(env), unsetenv_others: true,
        logs: {out: "herd.stdout.log", err: "herd.stderr.log"}, timeout: 60)
      @herd_port = Integer(wait_for(LISTENING)[1])
      @port = port || @herd_port
    rescue Minitest::Assertion
      cleanup # the caller never gets this object to clean up
      raise
    end

    # @return [Integer] the pid in the config's pidfile (the monitor's), remembered for #logged_pids
    def pidfile_pid
      pid = Integer(File.read(@pidfile))
      @pidfile_pids |= [pid]
      pid
    end

    # @return [Hash] {[:mold, gen] => pid, [:worker, number, gen] => pid} for every "ready" line so far
    def ready_pids
      lines.each_with_object({}) do |line, found|
        next unless (match = line.match(READY))

        key = (match[1] == "mold") ? [:mold, Integer(match[3])] : [:worker, Integer(match[2]), Integer(match[3])]
        found[key] = Integer(match[4])
      end
    end

    # @return [Array<Integer>] every pid the monitor's log named, the spawned one's and the pidfile's included
    def logged_pids
      ([pid] + @pidfile_pids + lines.flat_map { |line| line.scan(PID).flatten.compact.map { |pid| Integer(pid) } }).uniq
    end

    # A request on a fresh connection (herd closes each one), or on
    # `session`'s (`http keep_alive`: Net::HTTP reuses it while herd keeps
    # it, and reconnects when herd closed it).
    # @param session [Net::HTTP, nil] started by {#session}
    # @return [Net::HTTPResponse]
    def http(method, path, headers: {}, form: nil, session: nil)
      return send_request(session, method, path, headers, form) if session

      Net::HTTP.start("127.0.0.1", @port, open_timeout: 10, read_timeout: 30) { |http| send_request(http, method, path, headers, form) }
    end

    # One client connection for several requests, as a browser keeps one.
    # @yieldparam http [Net::HTTP]
    def session(&block)
      Net::HTTP.start("127.0.0.1", @port, open_timeout: 10, read_timeout: 30, &block)
    end

    def send_request(http, method, path, headers, form)
      request = (method == :post) ? Net::HTTP::Post.new(path, headers) : Net::HTTP::Get.new(path, headers)
      request.set_form_data(form) if form
      http.request(request)
    end

    # @return [Process::Status, nil] the spawned process's status once it has exited
    def reap
      @process.exited
    end

    # The stop signal (QUIT), then waits for the spawned process to exit.
    # @return [Process::Status]
    def stop(timeout: 60)
      @process.stop(@stop_signal, timeout: timeout)
    end

    # Whatever the test did: the stop signal and 10 s to stop, then every
    # process of its group killed (ServerProcess#cleanup); removes the
    # tmpdir unless HERD_KEEP_APP_DIRS=1.
    def cleanup
      @process&.cleanup(grace: 10, signal: @stop_signal)
    ensure
      FileUtils.rm_rf(@dir) unless ENV["HERD_KEEP_APP_DIRS"] == "1"
    end
  end
end
