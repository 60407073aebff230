# frozen_string_literal: true

module Herd
  # How herd reads an on/off environment switch (HERD_PREPARE_HEAP,
  # HERD_FAST_EXIT, HERD_NO_SUBREAPER, ...): every one goes through here, so
  # each takes the same words (docs/CONFIGURATION.md, "Environment variables").
  #
  # A switch has a default. One that is on by default is read with {off?}:
  # only an {OFF_VALUES} word turns it off. One that is off by default is read
  # with {on?}: only an {ON_VALUES} word turns it on. A few (HERD_KSM) are
  # read both ways and override a config setting either way. Case and surrounding
  # blanks do not matter. Anything else (unset, empty, `2`, a typo such as
  # `fasle`) leaves the switch at its default, without a warning: a variable
  # set for another tool, or left over from a shell, never stops a server.
  #
  #   EnvSwitch.off?("0")     # => true
  #   EnvSwitch.off?(" OFF ") # => true
  #   EnvSwitch.off?("fasle") # => false (a typo: the switch stays on)
  #   EnvSwitch.on?("yes")    # => true
  #   EnvSwitch.on?(nil)      # => false
  # @api private
  module EnvSwitch
    # The words that turn a switch off.
    OFF_VALUES = %w[0 false no off].freeze
    # The words that turn a switch on.
    ON_VALUES = %w[1 true yes on].freeze

    module_function

    # Whether `value` turns off a switch that is on by default.
    # @param value [String, nil] the variable's value (`ENV[name]`)
    # @return [Boolean]
    def off?(value)
      OFF_VALUES.include?(word(value))
    end

    # Whether `value` turns on a switch that is off by default.
    # @param value [String, nil] the variable's value (`ENV[name]`)
    # @return [Boolean]
    def on?(value)
      ON_VALUES.include?(word(value))
    end

    # @param value [String, nil]
    # @return [String] the value as compared: stripped, lower case
    def word(value)
      value.to_s.strip.downcase
    end
    private_class_method :word
  end
end
