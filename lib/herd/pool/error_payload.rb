# frozen_string_literal: true

module Herd
  class Pool
    # Carries an exception from a worker process to its parent.
    #
    # Marshal keeps an exception's class, message and backtrace but not its
    # cause, and fails outright on exceptions holding a Proc or an IO, or
    # whose class the parent does not know. So each exception travels both
    # marshalled and as text, with its cause chain alongside; the parent uses
    # the marshalled form when it loads and {RemoteError} otherwise.
    # @api private
    module ErrorPayload
      MAX_CAUSES = 5

      class << self
        # @return [Hash] plain data, safe to Marshal
        def dump(error, depth = 0)
          {
            marshalled: begin
              Marshal.dump(error)
            rescue TypeError, ArgumentError
              nil
            end,
            class_name: error.class.name || error.class.inspect,
            message: error.message.to_s,
            backtrace: error.backtrace,
            cause: (dump(error.cause, depth + 1) if error.cause && depth < MAX_CAUSES)
          }
        end

        # @return [Exception] the exception, as faithful as the parent can make it
        def load(payload)
          error = restore(payload)
          cause = payload[:cause] && load(payload[:cause])
          return error unless cause

          # Ruby sets #cause only when raising; do it here, once, so callers get the chain.
          begin
            raise error, cause: cause
          rescue Exception => with_cause # rubocop:disable Lint/RescueException -- we raised it ourselves
            with_cause
          end
        end

        private

        def restore(payload)
          # From our own worker.
          error = Marshal.load(payload[:marshalled]) if payload[:marshalled] # standard:disable Security/MarshalLoad
          error.is_a?(Exception) ? error : remote(payload)
        rescue ArgumentError, TypeError, NameError
          remote(payload)
        end

        def remote(payload)
          RemoteError.new(payload[:class_name], payload[:message], payload[:backtrace])
        end
      end
    end
  end
end
