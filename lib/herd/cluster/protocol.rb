# frozen_string_literal: true

module Herd
  module Cluster
    # Every message on a Link, who sends it and its fields: the one place to
    # look when a message is added. A message is an Array, its name first.
    # (test/cluster/protocol_test.rb checks that the code sends no other.)
    # @api private
    module Protocol
      # Sent by the monitor.
      FROM_MONITOR = {
        spawn_worker: "to a mold: [number, generation, scoreboard slot or nil, surge: whether it replaces a worker still serving]; the worker's end of its new link rides along (SCM_RIGHTS)",
        promote: "to a worker: [generation]; fork the next mold, whose end of its new link rides along",
        stop: "to any child: finish what is in flight and exit gracefully (at_exit hooks run)",
        reopen_logs: "to any child: USR1 reached the monitor; reopen log files (a worker between requests)"
      }.freeze

      # Sent by a mold or a worker.
      FROM_CHILD = {
        hello: "[pid, number or nil, generation]: the first thing a child says (the monitor can kill it from then on)",
        ready: "[]: booted (a mold) or accepting (a worker)",
        preparing: "[]: a mold's app is loaded and its heap preparation starts (at a lower priority): it gets 3 x spawn_timeout from now",
        boot_failed: "[error text]: a mold's app did not load; the child exits next",
        busy: "[request line]: a worker without a scoreboard slot started a request",
        idle: "[requests served]: a worker without a scoreboard slot finished one",
        fork_unsafe: "[reason]: Herd.no_longer_fork_safe! ran in this worker; never promote it",
        promotion_refused: "[reason]: on the would-be mold's link, from a worker no longer fork safe"
      }.freeze

      # @return [Array<Symbol>] every message name
      def self.names
        FROM_MONITOR.keys + FROM_CHILD.keys
      end
    end
  end
end
