# frozen_string_literal: true

require_relative "http/grammar"
require_relative "http/errors"
require_relative "http/options"
require_relative "http/request"
require_relative "http/parser"
require_relative "http/socket_reader"
require_relative "http/body_spool"
require_relative "http/body_reader"
require_relative "http/env_builder"
require_relative "http/http_date"
require_relative "http/response_headers"
require_relative "http/body_stream"
require_relative "http/response_writer"
require_relative "http/error_log"
require_relative "http/exchange"
require_relative "http/transaction"
require_relative "http/handler"

module Herd
  # The HTTP/1.1 layer of `herd serve`: everything that happens on one
  # accepted client socket. {Herd::HTTP::Handler} is the entry point; see
  # docs/HTTP.md for what is accepted and refused and why.
  # @api private
  module HTTP
  end
end
