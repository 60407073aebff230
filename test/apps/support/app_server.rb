# frozen_string_literal: true

require "fileutils"
require "net/http"
require "open3"
require "socket"
require "tmpdir"
require "uri"

module Herd
  # A real app under `herd serve`, started the way a user would: `bundle
  # exec herd serve` with the apps bundle of this Ruby (test/apps/rails8/Gemfile
  # on Ruby >= 3.2, Rails 8; test/apps/Gemfile on 3.1, Rails 7.2), in a copy of
  # the app's directory. The server's stdout and stderr go to files (not a pipe
  # that a reader thread drains): what the workers buffered and never wrote
  # is missing from the files, as it would be from a log file in production.
  #
  # The pid this class spawned is the monitor (or what runs it: Thruster);
  # every other pid it knows comes from the monitor's own log or from a
  # pidfile the test's config named. It signals nothing else.
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

    attr_reader :pid, :dir, :stdout_path, :stderr_path, :port, :herd_port

    # @param app [String] directory copied into a fresh tmpdir
    # @param config [String] herd.rb
    # @param env [Hash] more environment
    # @param command [Array<String>] what starts the server (default: herd serve with -c herd.rb)
    # @param config_path [String] where the config goes, relative to the app
    # @param port [Integer, nil] where requests go, when not to herd's own port (a proxy's)
    # @param pidfile [String, nil] the config's pidfile, relative to the app: its pid is signalled too
    # @param stop_signal [Symbol] what stops the spawned process gracefully
    def initialize(app:, config:, env: {}, command: nil, config_path: "herd.rb", port: nil, pidfile: nil, stop_signal: :QUIT)
      @dir = Dir.mktmpdir("herd-app")
      FileUtils.cp_r(File.join(app, "."), @dir)
      File.write(File.join(@dir, config_path), config)
      command ||= ["bundle", "exec", "herd", "serve", "config.ru", "-c", "herd.rb", "-l", "127.0.0.1:0"]
      @stdout_path = File.join(@dir, "herd.stdout.log")
      @stderr_path = File.join(@dir, "herd.stderr.log")
      @pidfile = pidfile && File.join(@dir, pidfile)
      @stop_signal = stop_signal
      @pidfile_pids = []
      @pid = Process.spawn(self.class.env(env), *command, chdir: @dir, in: File::NULL, out: @stdout_path, err: @stderr_path, pgroup: true, unsetenv_others: true)
      @status = nil
      @herd_port = Integer(wait_for(LISTENING)[1])
      @port = port || @herd_port
    rescue Minitest::Assertion
      cleanup # the caller never gets this object to clean up
      raise
    end

    # @return [Integer] the pid in the config's pidfile (the monitor's), remembered for cleanup
    def pidfile_pid
      pid = Integer(File.read(@pidfile))
      @pidfile_pids |= [pid]
      pid
    end

    # @return [Array<String>] the server's stderr (herd's log) so far
    def lines
      File.readlines(@stderr_path)
    end

    def stdout_lines
      File.readlines(@stdout_path)
    end

    # Blocks until a line of herd's log matches, polling the file; fails the
    # test when the monitor exits or the time runs out first.
    # @param after [Integer] ignore the first `after` lines
    # @return [MatchData]
    def wait_for(pattern, timeout: 60, after: 0)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      loop do
        all = lines
        all.drop(after).each do |line|
          match = line.match(pattern)
          return match if match
        end
        exited = reap
        if exited || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
          raise Minitest::Assertion, "no log line matched #{pattern.inspect} #{exited ? "before the monitor exited (#{@status.inspect})" : "in #{timeout}s"}; log:\n#{all.join}"
        end

        sleep 0.02
      end
    end

    def mark
      lines.size
    end

    # @return [Hash] {[:mold, gen] => pid, [:worker, number, gen] => pid} for every "ready" line so far
    def ready_pids
      lines.each_with_object({}) do |line, found|
        next unless (match = line.match(READY))

        key = (match[1] == "mold") ? [:mold, Integer(match[3])] : [:worker, Integer(match[2]), Integer(match[3])]
        found[key] = Integer(match[4])
      end
    end

    # The pidfile's pid, if the file is there (herd removes it when it stops).
    def remember_pidfile
      pidfile_pid if @pidfile
    rescue Errno::ENOENT, ArgumentError
      nil
    end

    # @return [Array<Integer>] every pid the monitor's log named, the spawned one's and the pidfile's included
    def logged_pids
      ([@pid] + @pidfile_pids + lines.flat_map { |line| line.scan(PID).flatten.compact.map { |pid| Integer(pid) } }).uniq
    end

    # @return [Array<String>] where each open descriptor of pid points
    #   ("socket", "pipe": inode numbers differ from process to process)
    def descriptors(pid)
      Dir.children("/proc/#{pid}/fd").sort_by(&:to_i).filter_map do |fd|
        File.readlink("/proc/#{pid}/fd/#{fd}").sub(/\A(socket|pipe):\[\d+\]\z/, "\\1")
      rescue Errno::ENOENT
        nil
      end
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

    # @return [Process::Status, nil] the monitor's status once it has exited
    def reap
      return @status if @status

      _, status = Process.waitpid2(@pid, Process::WNOHANG)
      @status = status
    rescue Errno::ECHILD
      @status ||= :gone
    end

    # The stop signal (QUIT), then waits for the spawned process to exit.
    # @return [Process::Status]
    def stop(timeout: 60)
      Process.kill(@stop_signal, @pid) unless reap
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      until reap
        raise Minitest::Assertion, "herd serve did not exit in #{timeout}s after #{@stop_signal}; log:\n#{lines.join}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

        sleep 0.02
      end
      @status
    end

    # Whatever the test did: the stop signal, then KILL the spawned process,
    # and KILL what its log or pidfile named that is still alive in its
    # process group; removes the tmpdir unless HERD_KEEP_APP_DIRS=1.
    def cleanup
      remember_pidfile
      unless reap
        begin
          Process.kill(@stop_signal, @pid)
          deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
          sleep 0.05 until reap || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
          unless reap
            Process.kill(:KILL, @pid)
            Process.wait(@pid)
            @status = :killed
          end
        rescue Errno::ESRCH, Errno::ECHILD
          nil
        end
      end
      logged_pids.each do |pid|
        next if pid == @pid || !self.class.alive?(pid)

        Process.kill(:KILL, pid) if Process.getpgid(pid) == @pid
      rescue Errno::ESRCH
        nil
      end
      FileUtils.rm_rf(@dir) unless ENV["HERD_KEEP_APP_DIRS"] == "1"
    end

    # @return [Boolean] alive and not a zombie
    def self.alive?(pid)
      File.read("/proc/#{pid}/stat").split(") ").last.split.first != "Z"
    rescue Errno::ENOENT, Errno::ESRCH
      false
    end

    # @return [Boolean] whether anything listens on 127.0.0.1:port
    def self.listening?(port)
      hex = format("%04X", port)
      %w[/proc/net/tcp /proc/net/tcp6].any? do |table|
        File.readlines(table).drop(1).any? do |row|
          fields = row.split
          fields[1].end_with?(":#{hex}") && fields[3] == "0A" # TCP_LISTEN
        end
      end
    end
  end
end
