# frozen_string_literal: true

module Herd
  class Pool
    # One batch in flight on one worker. Workers answer the items of a batch
    # in order, so the answered ones are always a prefix of {#pairs}.
    # @api private
    class Batch
      attr_reader :pairs
      attr_accessor :answered, :sent_at, :progress_at, :seen_started

      def initialize(pairs, sent_at, seen_started)
        @pairs = pairs
        @sent_at = sent_at
        @progress_at = sent_at
        @seen_started = seen_started
        @answered = 0
      end

      # @return [Object] the item at source position `index`
      def item(index)
        pair = @pairs.find { |candidate| candidate.first == index }
        pair&.last
      end

      # @return [Array<Array(Integer, Object)>] pairs not answered yet
      def unanswered
        @pairs.drop(@answered)
      end

      def size
        @pairs.size
      end
    end
  end
end
