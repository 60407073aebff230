# frozen_string_literal: true

module Herd
  class Pool
    # What a run does with each result, and what it returns: one small class
    # per Enumerable method. {#accept} returns :stop when the answer is known
    # early (any?, all?).
    # @api private
    module Operations
      # Results in input order.
      class Map
        def initialize(source, _source_object)
          @results = source.size ? Array.new(source.size) : []
        end

        def accept(index, value)
          @results[index] = value
          nil
        end

        def result
          @results
        end
      end

      # Enumerable#flat_map: arrays are spliced, other values kept.
      class FlatMap < Map
        def result
          super.flat_map { |value| value }
        end
      end

      # Enumerable#filter_map: nil and false are dropped.
      class FilterMap < Map
        def result
          super.select { |value| value }
        end
      end

      # Side effects only: keeps no result, returns the source.
      class Each
        def initialize(_source, source_object)
          @source_object = source_object
        end

        def accept(_index, _value)
          nil
        end

        def result
          @source_object
        end
      end

      # any? and all?: the answer is known at the first result whose
      # truthiness is `decisive`.
      class Decision
        def initialize(_source, _source_object, decisive:)
          @decisive = decisive
          @seen = false
        end

        def accept(_index, value)
          return nil unless (value ? true : false) == @decisive

          @seen = true
          :stop
        end

        def result
          @seen == @decisive
        end
      end

      # True as soon as one block returns truthy.
      class Any < Decision
        def initialize(source, source_object)
          super(source, source_object, decisive: true)
        end
      end

      # False as soon as one block returns falsy.
      class All < Decision
        def initialize(source, source_object)
          super(source, source_object, decisive: false)
        end
      end

      # The Enumerable methods herd offers: name => [operation, block gets the index too].
      BY_METHOD = {
        map: [Map, false], map_with_index: [Map, true], each: [Each, false], each_with_index: [Each, true],
        flat_map: [FlatMap, false], filter_map: [FilterMap, false], any?: [Any, false], all?: [All, false]
      }.freeze
    end
  end
end
