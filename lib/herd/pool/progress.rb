# frozen_string_literal: true

module Herd
  class Pool
    # A progress bar with rate and ETA (ruby-progressbar) on a terminal; nothing
    # elsewhere unless forced, so logs and CI output stay clean.
    # @api private
    module Progress
      # Used when progress is off.
      class Null
        def increment
        end

        def finish
        end
      end

      FORMAT_KNOWN = "%t |%B| %c/%C %p%% %r/s %e"
      FORMAT_UNKNOWN = "%t %c items %r/s %a"

      # @param option [Boolean, String, Hash] true, a title, or
      #   {title:, output:, force:} (force draws even when output is no TTY)
      # @param total [Integer, nil]
      # @return [#increment, #finish]
      def self.build(option, total)
        return Null.new unless option

        settings = option.is_a?(Hash) ? option : {}
        title = option.is_a?(String) ? option : settings.fetch(:title, "herd")
        output = settings.fetch(:output, $stderr)
        terminal = output.respond_to?(:tty?) && output.tty?
        return Null.new unless terminal || settings[:force]

        require "ruby-progressbar"
        ProgressBar.create(title: title, total: total, output: output,
          format: total ? FORMAT_KNOWN : FORMAT_UNKNOWN, rate_scale: ->(rate) { rate.round })
      end
    end
  end
end
