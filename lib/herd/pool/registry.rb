# frozen_string_literal: true

module Herd
  class Pool
    # Workers still running when the program exits are terminated then, so no
    # worker outlives its parent even when the caller forgot Pool#close.
    # @api private
    module Registry
      @open = {}
      @lock = Mutex.new

      class << self
        # @param workers [Workers]
        def add(workers)
          @lock.synchronize { @open[workers] = true }
        end

        def delete(workers)
          @lock.synchronize { @open.delete(workers) }
        end

        def close_all
          @lock.synchronize { @open.keys }.each(&:terminate)
        end
      end

      at_exit { close_all }
    end
  end
end
