# frozen_string_literal: true

module Herd
  module HTTP
    # Where a request came from and where it arrived: what the Rack env
    # needs beyond the request itself.
    #
    # @!attribute remote_addr
    #   @return [String] REMOTE_ADDR
    # @!attribute server_name
    #   @return [String] SERVER_NAME
    # @!attribute server_port
    #   @return [String] SERVER_PORT
    # @!attribute url_scheme
    #   @return [String] rack.url_scheme ("http" or "https")
    Connection = Struct.new(:remote_addr, :server_name, :server_port, :url_scheme)
  end
end
