# frozen_string_literal: true

module Herd
  # Return it from a producer lambda given as a source to say "no more items".
  Stop = Object.new.tap { |stop| stop.define_singleton_method(:inspect) { "Herd::Stop" } }.freeze

  class Pool
    # Where a run's items come from, pulled in batches and never forced
    # through #to_a: arrays and integer ranges by position, anything
    # enumerable (lazy and endless enumerators included) one item at a time,
    # a Queue until it is closed and empty, a lambda until it returns
    # {Herd::Stop}. Items handed back for a retry come out first.
    # @api private
    class Source
      # @return [Source]
      def self.for(object)
        case object
        when Array then Indexed.new(object.size) { |index| object[index] }
        when Range then range(object)
        when Thread::Queue then Queued.new(object)
        when Proc, Method then Enumerated.new(producer(object))
        when Enumerable then Enumerated.new(object.each_entry)
        else
          raise ArgumentError, "cannot take items from a #{object.class}: pass an Array, Range, Enumerable, " \
            "Enumerator, Queue, or a lambda returning Herd::Stop when done"
        end
      end

      # Integer ranges go by position, endless ones too: `(1..)` and
      # `1..Float::INFINITY` (whose size is Infinity, not a count) alike.
      def self.range(range)
        first = range.begin
        return Enumerated.new(range.each_entry) unless first.is_a?(Integer)

        Indexed.new(range.size) { |index| first + index }
      end

      def self.producer(callable)
        Enumerator.new do |yielder|
          loop do
            item = callable.call
            break if Stop.equal?(item)

            yielder << item
          end
        end
      end

      def initialize
        @retries = []
      end

      # @return [Integer, nil] how many items in all, when known
      def size
        nil
      end

      # @return [#call, nil] index -> item, for workers that share the source's memory
      def resolver
        nil
      end

      # @return [Array<Array(Integer, Object)>] up to `count` pairs [index, item];
      #   empty when nothing is available right now
      def take(count)
        return take_fresh(count) if @retries.empty?

        batch = @retries.shift(count)
        batch.concat(take_fresh(count - batch.size)) if batch.size < count
        batch
      end

      # Gives items back, to be taken again before any others.
      def retry(pairs)
        @retries.concat(pairs)
      end

      # @return [Boolean] no item will ever come again
      def exhausted?
        @retries.empty? && fresh_exhausted?
      end

      # A source whose items are known by position.
      class Indexed < Source
        attr_reader :size, :resolver

        # @param size [Integer, Float, nil] anything but a whole number
        #   (Infinity, nil) means endless
        def initialize(size, &resolver)
          super()
          @size = size.is_a?(Integer) ? size : nil
          @resolver = resolver
          @next = 0
        end

        private

        def take_fresh(count)
          stop = @size ? [@next + count, @size].min : @next + count
          pairs = (@next...stop).map { |index| [index, @resolver.call(index)] }
          @next = stop
          pairs
        end

        def fresh_exhausted?
          @size ? @next >= @size : false
        end
      end

      # Anything with #next: enumerators, lazy or endless.
      class Enumerated < Source
        def initialize(enumerator)
          super()
          @enumerator = enumerator
          @next = 0
          @done = false
        end

        private

        def take_fresh(count)
          pairs = []
          while pairs.size < count && !@done
            begin
              pairs << [@next, @enumerator.next]
              @next += 1
            rescue StopIteration
              @done = true
            end
          end
          pairs
        end

        def fresh_exhausted?
          return true if @done

          @enumerator.peek
          false
        rescue StopIteration
          @done = true
        end
      end

      # A Queue, read without blocking the event loop, until closed and empty.
      class Queued < Source
        def initialize(queue)
          super()
          @queue = queue
          @next = 0
        end

        private

        def take_fresh(count)
          pairs = []
          while pairs.size < count
            begin
              pairs << [@next, @queue.pop(true)]
              @next += 1
            rescue ThreadError
              break
            end
          end
          pairs
        end

        def fresh_exhausted?
          @queue.closed? && @queue.empty?
        end
      end
    end
  end
end
