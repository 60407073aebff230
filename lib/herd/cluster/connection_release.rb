# frozen_string_literal: true

require_relative "../env_switch"

module Herd
  module Cluster
    # Before a worker forks the next mold, the database connections it
    # opened while serving are closed: a connection inherited by the new
    # mold would be inherited again by every worker it forks, one more
    # descriptor per refork, and SQLite warns about each ("Writable sqlite
    # database connection(s) were inherited from a forked process").
    # ActiveRecord's own fork handling runs in the child, where SQLite's
    # adapter cannot close a parent's database cleanly (activerecord 7.2:
    # its discard! does nothing); closing here, in the process that opened
    # them, can. The worker reconnects on its next query.
    #
    # Built in for ActiveRecord (the one ORM every Rails app has); others go
    # in the `before_promotion` hook (docs/FORK_SAFETY.md). HERD_RELEASE_CONNECTIONS=0
    # turns this off.
    # @api private
    module ConnectionRelease
      SWITCH_ENV = "HERD_RELEASE_CONNECTIONS"

      module_function

      # @return [String, nil] what was released, for the log
      def release
        return nil if EnvSwitch.off?(ENV[SWITCH_ENV])
        return nil unless defined?(::ActiveRecord::Base) && ::ActiveRecord::Base.respond_to?(:connection_handler)

        pools = active_record_pools.select { |pool| pool.respond_to?(:connected?) ? pool.connected? : true }
        return nil if pools.empty?

        pools.each(&:disconnect!)
        "ActiveRecord: #{pools.size} connection pool(s) disconnected"
      end

      # Rails 7.1+ lists every role's pools with :all; 6.1 and 7.0 take no argument.
      def active_record_pools
        handler = ::ActiveRecord::Base.connection_handler
        list = handler.method(:connection_pool_list)
        list.arity.zero? ? handler.connection_pool_list : handler.connection_pool_list(:all)
      end
    end
  end
end
