# frozen_string_literal: true

require_relative "../clock"
require_relative "children"
require_relative "deadlines"
require_relative "forking"
require_relative "link"
require_relative "mold"

module Herd
  module Cluster
    # Starts the monitor's children: a mold forked from the monitor (it
    # loads config.ru, so it runs the code on disk now), and workers, which
    # the current mold forks on request (or the monitor itself, when it
    # loaded the app because there is no subreaper).
    # @api private
    class Spawner
      # @param children [Children]
      # @param context [Context]
      # @param service [Server::Service] what the workers do
      # @param signals [SignalQueue] the monitor's, reset in every child
      # @param workload [Workload]
      # @param monitor_ios [#call] → the monitor's own descriptors no child keeps (the control socket)
      def initialize(children:, context:, service:, signals:, workload:, monitor_ios: -> { [] })
        @children = children
        @context = context
        @service = service
        @signals = signals
        @workload = workload
        @monitor_ios = monitor_ios
      end

      # The monitor loads the app itself (no subreaper): it is the mold.
      # @return [Mold, nil]
      attr_reader :local_mold

      def boot_local_mold(generation)
        @local_mold = Mold.new(generation: generation, service: @service, context: @context)
        @local_mold.boot
      end

      # @return [Child] the new mold, spawning
      def spawn_mold(generation)
        mine, theirs = Link.pair
        mold = Mold.new(generation: generation, service: @service, context: @context)
        pid = Forking.fork_quietly do
          leave_monitor([mine.io])
          mold.run(theirs)
        end
        theirs.close
        @context.log.info(Monitor::ROLE, "mold (gen #{generation}) spawned as pid #{pid}")
        @children.add(Child.new(role: :mold, generation: generation, pid: pid, link: mine, state: :spawning,
          spawned_at: Clock.now))
      end

      # Asks `mold` (or the local mold) for worker `number`, on the lowest
      # scoreboard slot no living worker holds.
      # @param replaces [Child, nil] the older worker it takes over from (a surge rollout)
      # @return [Child, nil] nil when the mold is gone
      def spawn_worker(number, generation, mold, replaces: nil)
        slot = free_slot
        @workload.reset(slot)
        mine, theirs = Link.pair
        child = Child.new(role: :worker, number: number, generation: generation, link: mine, state: :spawning,
          spawned_at: Clock.now, requests: 0, slot: slot, replaces: replaces, spawn_budget: warm_up_budget(replaces))
        if mold
          sent = mold.link.send_message(Protocol::SpawnWorker.new(number, generation, slot, !replaces.nil?),
            io: theirs.io)
          theirs.close
          return mine.close && nil unless sent
        else
          child.pid = @local_mold.spawn_worker(number, generation, theirs.io, slot: slot, surge: !replaces.nil?,
            double_fork: false, in_child: -> { leave_monitor([mine.io]) })
        end
        @children.add(child)
      end

      # Asks a warmed worker to fork the next mold.
      # @return [Child, nil] the new mold, spawning; nil when the worker is gone
      def promote(worker, generation)
        mine, theirs = Link.pair
        sent = worker.link.send_message(Protocol::Promote.new(generation), io: theirs.io)
        theirs.close
        return mine.close && nil unless sent

        @children.add(Child.new(role: :mold, generation: generation, link: mine, state: :spawning,
          spawned_at: Clock.now, requests: 0))
      end

      private

      # A surge replacement warms up at prepare_heap's nice value (Worker),
      # and on a busy machine waits for the CPU the serving workers leave:
      # it gets the time a mold's preparation gets.
      def warm_up_budget(replaces)
        config = @context.config
        config.spawn_timeout * Deadlines::PREPARE_BUDGET if replaces && config.heap_nice&.positive?
      end

      # A worker keeps its slot until it is reaped: a stopping one still
      # writes to it while it finishes its request.
      def free_slot
        taken = @children.workers.map(&:slot)
        (0..taken.size).find { |slot| !taken.include?(slot) }
      end

      # First thing in a child forked by the monitor: none of the monitor's
      # signal handlers, and none of its links to other children (a sibling
      # holding one would hide that child's death from us).
      def leave_monitor(extra_ios)
        @signals.reset_in_child
        (@children.ios + extra_ios + @monitor_ios.call).each { |io| io.close unless io.closed? }
      end
    end
  end
end
