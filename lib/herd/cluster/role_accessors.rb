# frozen_string_literal: true

module Herd
  module Cluster
    # What a mold and a worker both read from their @info and @context.
    # @api private
    module RoleAccessors
      private

      def role
        @info.to_s
      end

      def config
        @context.config
      end

      def hooks
        config.hooks
      end

      def log
        @context.log
      end
    end
  end
end
