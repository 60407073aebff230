# frozen_string_literal: true

require_relative "../errors"

module Herd
  module Server
    # One setting of the config file: its name, its default, and the check
    # its value must pass ({Config.setting} declares them).
    # @api private
    Setting = Struct.new(:name, :default, :check) do
      # @return [Object] the default (a callable default is called, so each
      #   Config gets its own, e.g. the CPU count read then)
      def default_value
        default.respond_to?(:call) ? default.call : default
      end

      # @raise [ConfigError] unless the value passes the check
      def validate!(value)
        check&.call(name, value)
      end
    end

    # The checks settings share; each takes (name, value) and raises
    # {ConfigError} with a message saying what the setting takes.
    # @api private
    module SettingChecks
      module_function

      # @return [Proc] true or false
      def boolean
        lambda do |name, value|
          return if [true, false].include?(value)

          raise ConfigError, "#{name} must be true or false, e.g. #{name} true; got #{value.inspect}"
        end
      end

      # @return [Proc] a whole number >= min
      def whole(min)
        lambda do |name, value|
          return if value.is_a?(Integer) && value >= min

          raise ConfigError, "#{name} must be a whole number >= #{min}, got #{value.inspect}"
        end
      end

      # @return [Proc] a number of seconds > 0
      # refork_when shared_below: (0..1), uss_above: (MiB), or nil
      def refork_when
        lambda do |_name, conditions|
          return if conditions.nil?

          shared, uss = conditions.is_a?(Hash) ? conditions.values_at(:shared_below, :uss_above) : []
          valid = conditions.is_a?(Hash) && !conditions.empty? &&
            (conditions.keys - %i[shared_below uss_above]).empty? &&
            (shared.nil? || (shared.is_a?(Numeric) && shared > 0 && shared < 1)) &&
            (uss.nil? || (uss.is_a?(Numeric) && uss.positive?))
          return if valid

          raise ConfigError, "refork_when takes shared_below: (a fraction between 0 and 1) and/or uss_above: (MiB), " \
            "e.g. refork_when shared_below: 0.5; got #{conditions.inspect}"
        end
      end

      # worker_memory_limit: nil or MiB > 0
      def memory_limit
        lambda do |_name, limit|
          return if limit.nil? || (limit.is_a?(Numeric) && limit.positive?)

          raise ConfigError, "worker_memory_limit must be nil or MiB > 0, e.g. 512; got #{limit.inspect}"
        end
      end

      def seconds
        lambda do |name, value|
          return if value.is_a?(Numeric) && value.positive?

          raise ConfigError, "#{name} must be a number of seconds > 0, got #{value.inspect}"
        end
      end

      # @return [Proc] false, or a number of seconds > 0
      def off_or_seconds
        lambda do |name, value|
          return if value == false || (value.is_a?(Numeric) && value.positive?)

          raise ConfigError, "#{name} must be false or a number of seconds > 0, e.g. 30; got #{value.inspect}"
        end
      end

      # @return [Proc] a number of seconds >= 0
      def seconds_or_zero
        lambda do |name, value|
          return if value.is_a?(Numeric) && value >= 0

          raise ConfigError, "#{name} must be a number of seconds >= 0, e.g. 5; got #{value.inspect}"
        end
      end

      # @param example [String] shown in the message
      # @param what [String] what the number counts
      # @return [Proc] false, or a whole number > 0
      def off_or_count(what, example)
        lambda do |name, value|
          return if value == false || (value.is_a?(Integer) && value.positive?)

          raise ConfigError, "#{name} must be false or a number of #{what} > 0, e.g. #{example}; got #{value.inspect}"
        end
      end

      # @return [Proc] false, or a non-empty list of whole numbers > 0
      def schedule
        lambda do |name, value|
          return if value == false
          return if value.is_a?(Array) && !value.empty? && value.all? { |n| n.is_a?(Integer) && n.positive? }

          raise ConfigError, "#{name} must be false or a list of request counts > 0, e.g. [50, 100, 1000]; " \
            "got #{value.inspect}"
        end
      end

      # @return [Proc] true, false, or a Hash of Herd::Heap.prepare options
      def heap_options
        lambda do |name, value|
          return if [true, false].include?(value)
          raise ConfigError, "#{name}: true, false or a Hash of Herd::Heap.prepare options" unless value.is_a?(Hash)

          require_relative "../heap"
          unknown = value.keys - Heap::OPTIONS
          unless unknown.empty?
            raise ConfigError, "#{name}: unknown option#{"s" if unknown.size > 1} #{unknown.join(", ")}; " \
              "known: #{Heap::OPTIONS.join(", ")}"
          end
          refused = value.key?(:compact) && Heap.compact_refused(value[:compact])
          raise ConfigError, "#{name}: #{refused}" if refused
          nice = value[:nice]
          return if nice.nil? || nice == 0 || (nice.is_a?(Integer) && Heap::LowPriority::RANGE.cover?(nice))

          raise ConfigError, "#{name}: nice: must be 0 (the mold's own priority) " \
            "or an Integer in #{Heap::LowPriority::RANGE}, got #{nice.inspect}"
        end
      end
    end
  end
end
