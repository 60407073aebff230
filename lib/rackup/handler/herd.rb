# frozen_string_literal: true

# `rackup -s herd` and `rails server -u herd` (Rack 3, the rackup gem).
require "herd/server/rack_handler"

module Rackup
  module Handler
    Herd = ::Herd::Server::RackHandler
    register :herd, Herd if respond_to?(:register)
  end
end
