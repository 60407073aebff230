# frozen_string_literal: true

module Herd
  module Cluster
    # Every message on a Link, who sends it and its fields: the one place to
    # look when a message is added. Each is a class of its own, Marshal'd
    # whole, and a receiver matches it by class (`case message when
    # Protocol::Hello`). test/cluster/protocol_test.rb checks that each is
    # sent and received somewhere.
    # @api private
    module Protocol
      # A message without fields.
      class Bare
        def ==(other)
          other.instance_of?(self.class)
        end
        alias_method :eql?, :==

        def hash
          self.class.hash
        end
      end

      # Monitor to a mold: fork worker `number` of `generation` on scoreboard
      # `slot` (nil: none, it reports over its link); `surge` when it
      # replaces a worker still serving. The worker's end of its new link
      # rides along (SCM_RIGHTS).
      SpawnWorker = Struct.new(:number, :generation, :slot, :surge)
      # Monitor to a worker: fork the next mold, of `generation`, whose end
      # of its new link rides along.
      Promote = Struct.new(:generation)
      # Monitor to any child: finish what is in flight and exit gracefully (at_exit hooks run).
      class Stop < Bare; end
      # Monitor to any child: USR1 reached the monitor; reopen log files (a worker between requests).
      class ReopenLogs < Bare; end

      # A child's first words (the monitor can kill it from then on); `number` is nil for a mold.
      Hello = Struct.new(:pid, :number, :generation)
      # Booted (a mold) or accepting (a worker).
      class Ready < Bare; end
      # A mold's app is loaded and its heap preparation starts (at a lower
      # priority): it gets 3 x spawn_timeout from now.
      class Preparing < Bare; end
      # A mold's app did not load (`error`: its class and message); the child exits next.
      BootFailed = Struct.new(:error)
      # A worker's YJIT stopped compiling (`settled` true) or compiles again
      # (false); sent by a worker with YJIT on, first with `ready`.
      JIT = Struct.new(:settled)
      # A worker without a scoreboard slot started a request (`label`: its request line).
      Busy = Struct.new(:label)
      # A worker without a scoreboard slot finished one (`requests`: served so far).
      Idle = Struct.new(:requests)
      # Herd.no_longer_fork_safe! ran in this worker (`reason`): never promote it.
      ForkUnsafe = Struct.new(:reason)
      # On the would-be mold's link, from a worker no longer fork safe (`reason`).
      PromotionRefused = Struct.new(:reason)

      # What the monitor sends.
      FROM_MONITOR = [SpawnWorker, Promote, Stop, ReopenLogs].freeze
      # What a mold or a worker sends.
      FROM_CHILD = [Hello, Ready, Preparing, BootFailed, JIT, Busy, Idle, ForkUnsafe, PromotionRefused].freeze

      # @return [Array<Class>] every message
      def self.messages
        FROM_MONITOR + FROM_CHILD
      end
    end
  end
end
