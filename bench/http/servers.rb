# frozen_string_literal: true

require "fileutils"
require "shellwords"
require "tmpdir"
require_relative "support"

module HttpBench
  # How to start and stop one server with 2 workers on 127.0.0.1.
  #   gem:    nil for herd, else the bench-group gem that must be installed
  #   argv:   the command, given the app's .ru file and a port
  #   port:   :zero when the server binds port 0 and logs the real one
  #   ready:  the log line with the real port (for port: :zero)
  #   stop:   the signal for a graceful stop
  Server = Struct.new(:name, :gem, :argv, :port, :ready, :stop, keyword_init: true) do
    def version
      gem ? Gem.loaded_specs[gem]&.version&.to_s : Herd::VERSION
    end

    # @return [String, nil] why the server cannot run, nil when it can
    def missing
      "#{gem} gem not installed; #{GEM_HINT}" unless version
    end
  end

  CONFIG = __dir__

  # herd's lib/ and exe/ at git revision `ref`, in a new temporary directory,
  # with that revision's C extension built into its lib/herd/ when it has
  # one (as `rake compile` builds it in a checkout): without it, a baseline
  # would parse every request in Ruby and not be the herd users ran.
  # @return [String] the directory
  def self.extract_herd(ref)
    dir = Dir.mktmpdir("herd-#{ref}")
    ok = system("git archive #{ref.shellescape} lib exe | tar -x -C #{dir.shellescape}", chdir: ROOT)
    abort "bench/http: cannot extract herd at #{ref} (git archive failed)" unless ok
    build_extension(ref, dir)
    dir
  end

  def self.build_extension(ref, dir)
    # ext/herd/head_scanner before issue 37 named it for what it is.
    name = %w[native head_scanner].find do |candidate|
      system("git cat-file -e #{ref.shellescape}:ext/herd/#{candidate}/extconf.rb", chdir: ROOT, err: File::NULL)
    end
    return unless name

    source = "ext/herd/#{name}"
    build = File.join(dir, "build")
    FileUtils.mkdir_p(build)
    ok = system("git archive #{ref.shellescape} ext | tar -x -C #{dir.shellescape}", chdir: ROOT) &&
      system(RbConfig.ruby, File.join(dir, source, "extconf.rb"), chdir: build, out: File::NULL) &&
      system("make", "-s", chdir: build, out: File::NULL)
    built = Dir[File.join(build, "#{name}.*")].find { |path| path.end_with?(".#{RbConfig::CONFIG["DLEXT"]}") }
    abort "bench/http: cannot build herd's C extension at #{ref}" unless ok && built
    FileUtils.cp(built, File.join(dir, "lib", "herd"))
  end

  # herd as extracted by {extract_herd}, run with the same bundle.
  def self.baseline_server(ref, dir)
    Server.new(name: "herd@#{ref}", gem: nil, port: :zero, ready: SERVERS.first.ready, stop: "QUIT",
      argv: ->(app, _port) { %W[bundle exec ruby -I #{dir}/lib #{dir}/exe/herd serve #{app} -w 2 -l #{HOST}:0] })
  end

  SERVERS = [
    Server.new(name: "herd", gem: nil, port: :zero, ready: /ready: \d+ workers serving http:\/\/127\.0\.0\.1:(\d+)/, stop: "QUIT",
      argv: ->(app, _port) { %W[bundle exec herd serve #{app} -w 2 -l #{HOST}:0] }),
    # herd with `http keep_alive: 5`, against Puma, which keeps connections by default.
    Server.new(name: "herd-keep-alive", gem: nil, port: :zero, ready: /ready: \d+ workers serving http:\/\/127\.0\.0\.1:(\d+)/, stop: "QUIT",
      argv: ->(app, _port) { %W[bundle exec herd serve #{app} -w 2 -l #{HOST}:0 -c #{CONFIG}/herd_keep_alive.rb] }),
    Server.new(name: "pitchfork", gem: "pitchfork", port: :free, stop: "QUIT",
      argv: ->(app, _port) { %W[bundle exec pitchfork -c #{CONFIG}/pitchfork.conf.rb #{app}] }),
    Server.new(name: "unicorn", gem: "unicorn", port: :free, stop: "QUIT",
      argv: ->(app, _port) { %W[bundle exec unicorn -c #{CONFIG}/unicorn.conf.rb #{app}] }),
    Server.new(name: "puma", gem: "puma", port: :free, stop: "TERM",
      argv: ->(app, _port) { %W[bundle exec puma -C #{CONFIG}/puma.conf.rb #{app}] })
  ].freeze
end
