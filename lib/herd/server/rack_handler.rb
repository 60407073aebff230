# frozen_string_literal: true

require_relative "../server"

module Herd
  module Server
    # What `rackup -s herd` and `rails server -u herd` call. The app is
    # already loaded by then (in the process that becomes the monitor), so
    # the mold uses it as is instead of reading config.ru; for the full
    # model (a monitor that never loads the app) run `herd serve`.
    module RackHandler
      # Options rackup passes: Host, Port, and -O Key=Value pairs:
      # Workers, Timeout, Config (a herd.rb file).
      # @return [Integer] exit status
      def self.run(app, **options)
        config = Config.new
        config.load_file(options[:Config]) if options[:Config]
        config.app = app
        host = options[:Host] || "localhost"
        host = "[#{host}]" if host.include?(":") && !host.start_with?("[")
        config.add_listener("#{host}:#{options[:Port] || 8080}") if options[:Port] || config.listen_specs.empty?
        config.workers = Integer(options[:Workers]) if options[:Workers]
        config.timeout = Float(options[:Timeout]) if options[:Timeout]
        config.validate!
        yield config if block_given?
        Server.run(config)
      end

      # @return [Hash] for `rackup -h -s herd`
      def self.valid_options
        {"Workers=N" => "worker processes (default: usable CPUs)", "Timeout=SECONDS" => "request timeout (default 30)",
         "Config=PATH" => "a herd.rb config file"}
      end
    end
  end
end
