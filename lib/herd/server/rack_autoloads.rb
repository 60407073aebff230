# frozen_string_literal: true

require_relative "../env_switch"

module Herd
  module Server
    # Loads, in a mold, the parts of Rack that Rack itself loads only when a
    # request first needs them, so that workers inherit them instead of each
    # loading its own copy.
    #
    # Rack declares most of its constants with `autoload`. One of them lies
    # on the path of ordinary requests: Rack::Request#POST reaches
    # `Rack::Multipart` for every form body, multipart or not. Left alone,
    # each worker loads rack/multipart (4 files) on its first POST. The files
    # are the smaller cost: on Ruby 3.1 (and 3.0) defining a constant
    # invalidates every constant cache of the process, so each worker then
    # rewrites the caches of all the code it runs, pages of the mold's
    # malloc heap that it copies, and its first POST is slow
    # (docs/COPY_ON_WRITE.md, "Code loaded after the fork", has the
    # figures).
    #
    # Only what a request reaches through Rack's own request parsing: the
    # rest of Rack's autoloads are middleware, which an app's builder loads
    # at boot when it uses them (loading them all would cost every app
    # memory for nothing). HERD_RACK_AUTOLOADS=0 turns this off.
    # @api private
    module RackAutoloads
      SWITCH_ENV = "HERD_RACK_AUTOLOADS"
      # Reached by Rack::Request#POST (rack 2.2 to 3.2).
      ON_THE_REQUEST_PATH = %i[Multipart].freeze

      module_function

      # @return [String, nil] what was loaded, for the log; nil when nothing was
      def load(env: ENV)
        return nil if EnvSwitch.off?(env[SWITCH_ENV])
        return nil unless defined?(::Rack) && ::Rack.respond_to?(:autoload?)

        loaded = ON_THE_REQUEST_PATH.select { |name| resolve(name) }
        return nil if loaded.empty?

        them = (loaded.size == 1) ? "it" : "them"
        "#{loaded.map { |name| "Rack::#{name}" }.join(", ")} loaded now, not on each worker's first request " \
          "(Rack autoloads #{them}; #{SWITCH_ENV}=0 leaves #{them} to Rack)"
      end

      # A broken or missing file is left for the request that needs it,
      # which reports it where the app's errors go.
      def resolve(name)
        return false unless ::Rack.autoload?(name)

        ::Rack.const_get(name)
        true
      rescue ScriptError, StandardError
        false
      end
    end
  end
end
