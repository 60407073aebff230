# frozen_string_literal: true

module Herd
  class Pool
    # Pools still open when the program exits are closed then, so no worker
    # outlives its parent even when the caller forgot #close.
    # @api private
    module Registry
      @pools = {}
      @lock = Mutex.new
      @owner = Process.pid

      class << self
        def add(pool)
          @lock.synchronize { @pools[pool] = true }
        end

        def delete(pool)
          @lock.synchronize { @pools.delete(pool) }
        end

        def close_all
          @lock.synchronize { @pools.keys }.each(&:terminate)
        end
      end

      at_exit { close_all }
    end
  end
end
