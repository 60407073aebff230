# frozen_string_literal: true

module Herd
  module Cluster
    # The monitor's view of one child process.
    # @api private
    # `spawn_budget`: seconds from `spawned_at` it has to become ready (nil:
    # spawn_timeout); a mold's heap preparation gets more ({Deadlines}).
    # `slot`: a worker's place on the scoreboard (not its number: during a
    # surge rollout two workers share a number). `replaces`: the older
    # worker a surge replacement stops once it is ready ({Rollout}).
    # `killed`: why {Deadlines} sent it SIGKILL (:timeout, :spawn_timeout).
    Child = Struct.new(:role, :number, :generation, :pid, :link, :state, :spawned_at, :busy_since, :busy_with,
      :requests, :fork_unsafe, :spawn_budget, :slot, :replaces, :killed, :jit_settled, keyword_init: true) do
      def worker?
        role == :worker
      end

      def mold?
        role == :mold
      end

      def ready?
        state == :ready
      end

      def to_s
        name = mold? ? "mold (gen #{generation})" : "worker #{number} (gen #{generation})"
        pid ? "#{name}, pid #{pid}" : name
      end
    end

    # Every child the monitor knows, by link and by pid.
    # @api private
    class Children
      include Enumerable

      def initialize
        @all = []
      end

      def add(child)
        @all << child
        child
      end

      def delete(child)
        @all.delete(child)
        child.link&.close
      end

      def each(&block)
        @all.dup.each(&block)
      end

      def workers
        @all.select(&:worker?)
      end

      def molds
        @all.select(&:mold?)
      end

      def by_pid(pid)
        @all.find { |child| child.pid == pid }
      end

      def by_io(io)
        @all.find { |child| child.link&.io == io }
      end

      # Asks a child to stop. It finishes what it is doing and exits. A
      # worker not ready yet may be held in its start (an after_fork hook),
      # where it reads no message: it also gets QUIT, which ends a worker
      # at once until it says ready and gracefully after (so a worker whose
      # :ready is on its way is not cut off mid-request; ChildSignals). One
      # that has not said hello yet gets it then ({Monitor}).
      def stop(child)
        starting = child.worker? && child.state == :spawning
        child.state = :stopping
        child.link.send_message(Protocol::Stop.new) unless child.link.closed?
        signal(child, :QUIT) if starting
      end

      # Sends `signal` to a child that told us its pid; a child already gone is no error.
      def signal(child, signal)
        Process.kill(signal, child.pid) if child.pid
      rescue Errno::ESRCH
        nil
      end

      # @return [Array<IO>] every link's descriptor (a new child closes them all but its own)
      def ios
        @all.filter_map { |child| child.link&.io unless child.link&.closed? }
      end
    end
  end
end
