# frozen_string_literal: true

require_relative "../server"
require_relative "settings_sources"

module Herd
  module Server
    # What `rackup -s herd` and `rails server -u herd` call. The app is
    # already loaded by then (in the process that becomes the monitor), so
    # the mold uses it as is instead of reading config.ru; for the full
    # model (a monitor that never loads the app) run `herd serve`.
    # @api private
    module RackHandler
      # rackup's defaults: a Port or Host equal to these was not chosen by
      # the user (rackup does not say; Rails does, in :user_supplied_options).
      RACKUP_DEFAULTS = {Port: [9292, "9292"], Host: ["localhost", "0.0.0.0", "127.0.0.1"]}.freeze

      # Options rackup passes: Host, Port, and -O Key=Value pairs: Workers,
      # Timeout, Config (a herd.rb file; default config/herd.rb when it
      # exists). The same precedence as `herd serve` (SettingsSources):
      # what the user typed, then PORT/WEB_CONCURRENCY, then the file.
      # @return [Integer] exit status
      def self.run(app, **options)
        config = SettingsSources.new(file: options[:Config]).build(flags(options))
        config.app = app
        config.timeout = Float(options[:Timeout]) if options[:Timeout]
        config.validate!
        yield config if block_given?
        Server.run(config)
      end

      # @return [Flags] what rackup's or Rails' options say. A typed port
      #   without a typed host listens on the launcher's own host (Rails:
      #   localhost in development), not on herd serve's every-interface
      #   default: `rails server -u herd -p 3001` binds what `rails server
      #   -p 3001` would.
      def self.flags(options)
        flags = Flags.new(workers: options[:Workers] && Integer(options[:Workers]))
        flags.port = options[:Port] if chosen?(options, :Port)
        flags.host = options[:Host] if chosen?(options, :Host) || (flags.port && options[:Host])
        flags.fallback_listen = fallback(options) unless flags.port || flags.host
        flags
      end

      # @return [Boolean] whether the user typed option `key`: not a default
      #   of rackup or Rails, and not PORT (Rails reports PORT as if typed;
      #   herd reads it itself, for 0.0.0.0 as a platform setting PORT expects)
      def self.chosen?(options, key)
        return false if options[key].nil?
        return false if key == :Port && ENV["PORT"] && options[:Port].to_s == ENV["PORT"].strip
        return Array(options[:user_supplied_options]).include?(key) if options.key?(:user_supplied_options)

        !RACKUP_DEFAULTS.fetch(key).include?(options[key])
      end

      # @return [String, nil] rackup's or Rails' own address, used when
      #   nothing else gives one (rackup: localhost:9292; Rails:
      #   localhost:3000 in development, 0.0.0.0:3000 otherwise)
      def self.fallback(options)
        return nil unless options[:Port]

        host = options[:Host] || "localhost"
        "#{(host.include?(":") && !host.start_with?("[")) ? "[#{host}]" : host}:#{options[:Port]}"
      end

      # @return [Hash] for `rackup -h -s herd`
      def self.valid_options
        {"Workers=N" => "worker processes (default: usable CPUs)", "Timeout=SECONDS" => "request timeout (default 30)",
         "Config=PATH" => "a herd.rb config file"}
      end
    end
  end
end
