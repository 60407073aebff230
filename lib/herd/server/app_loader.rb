# frozen_string_literal: true

require_relative "../cluster/lean_monitor"

module Herd
  module Server
    # Loads the Rack application, in the mold only: the monitor never does.
    # The HTTP layer (and Rack with it) and herd's public API are loaded here
    # too, so the monitor stays small (docs/COPY_ON_WRITE.md, "Reforking
    # (`herd serve`)") and the workers share them with the mold.
    # @api private
    module AppLoader
      # @return [#call]
      # @raise [ConfigError] when the file is missing; anything the app raises propagates
      def self.load(config)
        Cluster::LeanMonitor.restore!
        require "herd"
        require "herd/http"
        return config.app if config.app

        path = File.expand_path(config.rackup)
        raise ConfigError, "no Rack app file at #{path}; pass one: herd serve path/to/config.ru" unless File.file?(path)

        require "rack"
        require "rack/builder"
        app = Rack::Builder.parse_file(path)
        app.is_a?(Array) ? app.first : app # Rack 2 returns [app, options]
      end
    end
  end
end
