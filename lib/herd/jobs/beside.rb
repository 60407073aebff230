# frozen_string_literal: true

require_relative "../errors"

module Herd
  module Jobs
    # What the config file's `jobs` says: job workers forked from the web
    # workers' mold, after them (`workers 4` and `jobs :sidekiq, processes:
    # 2` make workers 0-3 serve HTTP and 4-5 run Sidekiq).
    # @api private
    class Beside
      SYSTEMS = {
        sidekiq: ["sidekiq_engine", "SidekiqEngine"],
        solid_queue: ["solid_queue_engine", "SolidQueueEngine"]
      }.freeze
      # What an engine of one's own answers (JobLoop, Service).
      ENGINE_METHODS = %i[boot start beat quiet stop alive? leave tally stop_seconds].freeze

      # @return [Integer] how many job workers
      attr_reader :processes

      # @param system [Symbol, Object] :sidekiq, :solid_queue, or an engine
      #   object (docs/JOBS.md, "A job system of your own")
      # @param processes [Integer]
      # @param args [Array<String>] the job system's own options, as after `--` on its command
      # @raise [ConfigError]
      def initialize(system, processes:, args: [])
        @system = system
        @processes = processes
        @args = args
        validate!
      end

      # @return [Object] the job system's engine (loaded here: the monitor
      #   needs only its name, the mold loads the job system itself)
      def engine
        return @system unless @system.is_a?(Symbol)

        file, name = SYSTEMS.fetch(@system)
        require_relative file
        Jobs.const_get(name).new(@args)
      end

      private

      def validate!
        unless @processes.is_a?(Integer) && @processes >= 0
          raise ConfigError, "jobs: processes must be a whole number >= 0, e.g. processes: 2; got #{@processes.inspect}"
        end
        unless @args.is_a?(Array) && @args.all?(String)
          raise ConfigError, "jobs: args must be a list of strings, e.g. args: %w[-q critical]; got #{@args.inspect}"
        end
        return if SYSTEMS.key?(@system)

        missing = ENGINE_METHODS.reject { |method| @system.respond_to?(method) }
        return if missing.empty? && !@system.is_a?(Symbol)

        raise ConfigError, "jobs: #{@system.inspect} is not a job system herd runs; write :sidekiq, :solid_queue, " \
          "or pass an engine object (it lacks #{missing.join(", ")}; docs/JOBS.md)"
      end
    end
  end
end
