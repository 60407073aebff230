# frozen_string_literal: true

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

  # herd at an earlier revision (Bench::Baseline), run with the same bundle.
  def self.baseline_server(baseline)
    Server.new(name: baseline.name, gem: nil, port: :zero, ready: SERVERS.first.ready, stop: "QUIT",
      argv: ->(app, _port) { baseline.command + %W[serve #{app} -w 2 -l #{HOST}:0] })
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
