# frozen_string_literal: true

module Herd
  module Cluster
    # The configuration's hooks, run so that an exception in one is logged
    # with its backtrace and contained: it never takes a process down.
    # @api private
    class Hooks
      # `before_fork` and `after_fork` run around each worker fork, with the
      # names they have in Herd.* and in the pool (docs/API.md).
      NAMES = %i[before_fork after_mold_fork after_fork after_worker_ready
        after_request_complete before_promotion before_worker_exit after_worker_exit].freeze

      def initialize
        @blocks = Hash.new { |hash, name| hash[name] = [] }
      end

      # The config DSL.
      # @api private
      def add(name, block)
        raise ArgumentError, "unknown hook #{name.inspect}; hooks: #{NAMES.join(", ")}" unless NAMES.include?(name)
        raise ArgumentError, "#{name} needs a block" unless block

        @blocks[name] << block
      end

      # @return [Boolean] whether any block is registered for `name`
      def any?(name)
        !@blocks[name].empty?
      end

      # Runs every block for `name`; logs and swallows their exceptions.
      def run(name, log, role, *args)
        @blocks[name].each do |block|
          block.call(*args)
        rescue Exception => e # rubocop:disable Lint/RescueException -- a hook must never take the process down
          raise if e.is_a?(SystemExit)

          file, line = block.source_location
          log.error(role, "#{name} hook (#{file}:#{line}) raised; carrying on", e)
        end
      end
    end
  end
end
