# frozen_string_literal: true

module Herd
  class Pool
    # Herd.map and friends: Enumerable's methods over worker processes, for
    # one call. Workers are forked after the call starts (so the block and
    # the source exist in them), read items from their copy-on-write copy of
    # arrays and ranges (only positions travel), and are reaped before the
    # call returns — whatever happens.
    #
    # Options, besides those of {Pool#initialize} (processes:, threads:,
    # before_fork:, after_fork:, run_at_exit:, prepare_heap:,
    # max_items_per_worker:, shutdown_timeout:):
    # - chunk_size: items per message (default: adaptive)
    # - timeout: seconds one item may take; its worker is killed and
    #   {Herd::TimeoutError} raised (on_timeout: :continue puts the error in the
    #   item's place and carries on)
    # - retries: how often an item whose worker died or timed out is retried
    # - progress: true, a title, or {title:, output:, force:}
    # - start: / finish: called in the parent with (item, index) / (item, index, result)
    module Methods
      # @!method map(source, **options, &block)
      #   @return [Array] the block's results, in input order
      # @!method map_with_index(source, **options, &block)
      #   @return [Array] like {#map}; the block gets (item, index)
      # @!method each(source, **options, &block)
      #   @return [Object] the source
      # @!method each_with_index(source, **options, &block)
      #   @return [Object] the source; the block gets (item, index)
      # @!method flat_map(source, **options, &block)
      #   @return [Array] results with arrays spliced in
      # @!method filter_map(source, **options, &block)
      #   @return [Array] truthy results only (nil and false dropped)
      # @!method any?(source, **options, &block)
      #   @return [Boolean] stops at the first truthy result
      # @!method all?(source, **options, &block)
      #   @return [Boolean] stops at the first falsy result
      Operations::BY_METHOD.each do |name, (operation, with_index)|
        define_method(name) do |source, **options, &block|
          run_once(name, source, operation, with_index, options, block)
        end
      end

      # @return [Integer, nil] inside a worker, its number (0...size); nil elsewhere
      def worker_number
        Thread.current[:herd_worker_number] || @worker_number
      end

      # @api private
      attr_writer :worker_number

      private

      def run_once(name, source_object, operation_class, with_index, options, block)
        raise ArgumentError, "Herd.#{name} needs a block" unless block

        pool_options, run_options = split_options(options)
        settings = RunSettings.build(**run_options) # refuse bad options before forking anything
        source = Source.for(source_object)
        Workers.guarded(-> { Workers.one_call(source, block, pool_options) }) do |workers|
          Run.new(workers, source, operation_class.new(source, source_object), settings, with_index: with_index).call
        end
      end

      # Splits Herd.map's options into the pool's and the call's, refusing unknown keys.
      # @return [Array(Hash, Hash)]
      def split_options(options)
        known = PoolSettings.members + RunSettings.members
        unknown = options.keys - known
        unless unknown.empty?
          raise ArgumentError, "unknown option#{"s" if unknown.size > 1} #{unknown.map(&:inspect).join(", ")}; " \
            "known: #{known.join(", ")}"
        end
        [options.slice(*PoolSettings.members), options.slice(*RunSettings.members)]
      end
    end
  end

  extend Pool::Methods
end
