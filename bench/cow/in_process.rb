# frozen_string_literal: true

require "rack"
require "rack/mock"

module CowBench
  # A Rack app served in-process, without a server: what bench/cow's
  # scripts that measure one process and its forks call a request.
  module InProcess
    # @param rackup [String] path of a config.ru
    # @param target [String] the request's path (and query)
    # @return [Proc] serves one request, reading the whole body
    def self.server(rackup, target = "/")
      app = Rack::Builder.parse_file(rackup)
      app = app.first if app.is_a?(Array) # Rack 2 returns [app, options]
      env = Rack::MockRequest.env_for(target)
      lambda do
        _status, _headers, body = app.call(env.dup)
        body.each { |_chunk| }
        body.close if body.respond_to?(:close)
      end
    end
  end
end
