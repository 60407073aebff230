# frozen_string_literal: true

module Herd
  module HTTP
    # One line per error to the configured logger, and backtraces of
    # application errors to rack.errors. Logging never raises: a closed log
    # must not turn a served request into a crash.
    class ErrorLog
      # @param logger [#call, #puts, #write, nil] nil: write lines to `errors`
      # @param errors [IO] rack.errors
      def initialize(logger, errors)
        @logger = logger
        @errors = errors
      end

      # @param message [String] one line
      def line(message)
        message = "herd: #{message}"
        if @logger.respond_to?(:call) then @logger.call(message)
        elsif @logger.respond_to?(:puts) then @logger.puts(message)
        elsif @logger then @logger.write("#{message}\n")
        else @errors.puts(message)
        end
      rescue
        nil
      end

      # A line naming the error, then its backtrace and causes on rack.errors.
      # @param message [String] what was going on
      # @param error [Exception]
      def exception(message, error)
        line("#{message}: #{error.class}: #{error.message.lines.first&.chomp}")
        @errors.write(describe(error))
        @errors.flush
      rescue
        nil
      end

      private

      def describe(error)
        text = "#{error.class}: #{error.message}\n"
        (error.backtrace || []).each { |frame| text << "\t" << frame << "\n" }
        text << "Caused by: " << describe(error.cause) if error.cause && error.cause != error
        text
      end
    end
  end
end
