# frozen_string_literal: true

# `rackup -s herd` on Rack 2.
require "herd/server/rack_handler"

module Rack
  module Handler
    Herd = ::Herd::Server::RackHandler
    register :herd, Herd if respond_to?(:register)
  end
end
