# frozen_string_literal: true

require_relative "cluster/monitor"

module Herd
  # The process model: a monitor that never loads the app, a mold that loads
  # it and prepares its heap, sibling workers forked from the mold, and
  # reforking (a warmed worker becomes the next mold). What the workers do
  # is their service's: Server::Service serves HTTP for `herd serve`.
  # ARCHITECTURE.md has the map.
  # @api private
  module Cluster
  end
end
