# frozen_string_literal: true

module Herd
  # herd's environment switches (HERD_HEAP_INTERNALS, HERD_PREPARE_HEAP,
  # HERD_FAST_EXIT, ...) all read "off" the same way.
  # @api private
  module EnvSwitch
    # The values that turn a switch off; anything else, or nothing, leaves it on.
    OFF_VALUES = %w[0 false no off].freeze

    module_function

    # @param value [String, nil] the variable's value
    # @return [Boolean]
    def off?(value)
      OFF_VALUES.include?(value.to_s.strip.downcase)
    end
  end
end
