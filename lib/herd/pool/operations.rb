# frozen_string_literal: true

module Herd
  class Pool
    # What a run does with each result, and what it returns: one small class
    # per Enumerable method. {#accept} returns :stop when the answer is known
    # early (any?, all?).
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

      # True as soon as one block returns truthy.
      class Any
        def initialize(_source, _source_object)
          @found = false
        end

        def accept(_index, value)
          return nil unless value

          @found = true
          :stop
        end

        def result
          @found
        end
      end

      # False as soon as one block returns falsy.
      class All
        def initialize(_source, _source_object)
          @all = true
        end

        def accept(_index, value)
          return nil if value

          @all = false
          :stop
        end

        def result
          @all
        end
      end
    end
  end
end
