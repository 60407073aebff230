# frozen_string_literal: true

require "rack/version"
require_relative "../version"

module Herd
  module HTTP
    # Turns a parsed {Request} and its body into a Rack environment (Rack 3
    # SPEC; the Rack 2 keys too when Rack 2 is loaded).
    class EnvBuilder
      SERVER_SOFTWARE = "herd/#{Herd::VERSION}".freeze
      RACK2 = Gem::Version.new(Rack.release) < Gem::Version.new("3")

      # @param options [Options]
      def initialize(options)
        # The entries every env has, set with one Hash#update (C) instead of
        # one []= each.
        @constant = {
          "SCRIPT_NAME" => "", "SERVER_SOFTWARE" => SERVER_SOFTWARE, "rack.errors" => options.errors,
          "rack.hijack?" => true, "rack.multithread" => false, "rack.multiprocess" => true, "rack.run_once" => false
        }
        @constant["rack.version"] = Rack::VERSION.dup.freeze if RACK2
        @constant.freeze
      end

      # The entries set per request, in the order {#build} sets them.
      PER_REQUEST = %w[REQUEST_METHOD PATH_INFO QUERY_STRING SERVER_PROTOCOL REMOTE_ADDR
        rack.input rack.response_finished rack.hijack].freeze

      # What every env of a listener's connections starts as, for
      # {HeadScanner.receive}, which copies it and adds the request's header
      # fields and request line: the constant entries, the listener's, and
      # a placeholder (nil) for each entry set per request, so that a copy
      # has room for them all and setting them never grows its table.
      # {#complete} sets the rest.
      # @param server_name [String]
      # @param server_port [String]
      # @param url_scheme [String]
      # @return [Hash] frozen
      def template(server_name, server_port, url_scheme)
        # Frozen values: every env of the worker's life shares them.
        template = @constant.merge("SERVER_NAME" => -server_name, "SERVER_PORT" => -server_port,
          "rack.url_scheme" => -url_scheme)
        PER_REQUEST.each { |key| template[key] = nil }
        template.freeze
      end

      # The env of a request {HeadScanner.receive} parsed from a
      # {#template}: what only the connection and the transaction know.
      # (Such a request has no Transfer-Encoding: the scanner leaves those
      # to the Ruby parser.)
      # @param request [Request] its headers are the env
      # @param input [IO] rack.input
      # @param connection [Connection]
      # @return [Hash]
      def complete(request, input, connection)
        env = request.headers
        env["REMOTE_ADDR"] = connection.remote_addr
        env["rack.input"] = input
        env["rack.response_finished"] = []
        env
      end

      # The request's header hash becomes the env (no copy).
      # @param request [Request]
      # @param input [IO] rack.input
      # @param input_size [Integer] body bytes; CONTENT_LENGTH for a chunked body
      # @param trailers [Hash, nil] env-keyed trailers of a chunked body, as env["herd.trailers"]
      # @param connection [Connection]
      # @return [Hash]
      def build(request, input, input_size, trailers, connection)
        env = request.headers
        if request.chunked
          # The application gets the decoded body: a length, not a coding.
          env.delete("HTTP_TRANSFER_ENCODING")
          env["CONTENT_LENGTH"] = input_size.to_s
          env["herd.trailers"] = trailers || {}
        end
        env.update(@constant)
        env["REQUEST_METHOD"] = request.method
        env["PATH_INFO"] = request.path
        env["QUERY_STRING"] = request.query
        env["SERVER_NAME"] = connection.server_name
        env["SERVER_PORT"] = connection.server_port
        env["SERVER_PROTOCOL"] = request.version
        env["REMOTE_ADDR"] = connection.remote_addr
        env["rack.url_scheme"] = connection.url_scheme
        env["rack.input"] = input
        env["rack.response_finished"] = []
        env
      end
    end
  end
end
