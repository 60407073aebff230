# frozen_string_literal: true

require_relative "../clock"
require_relative "monitor/part"
require_relative "backoff"

module Herd
  module Cluster
    # Moving the server from one generation to the next, for both ways a new
    # mold comes:
    #
    # - a refork (USR2, `refork_after`, a mold that died): the warmest
    #   fork-safe worker forks the next mold, so the app stays warm;
    # - a reload (HUP): a fresh mold forked from the monitor loads config.ru,
    #   so the code on disk now.
    #
    #   idle ──start──► pending (the new mold boots; the current generation serves)
    #     ▲                │ ready: it is the current generation; older molds stop
    #     │                ▼
    #     └─── rolling: the new mold forks replacements for older workers,
    #                   rollout_max_surge at a time ahead of the worker each
    #                   replaces (which stops once its replacement is ready),
    #                   and older workers stop rollout_max_unavailable at a
    #                   time to be replaced after
    #
    # A new mold that fails leaves the current generation serving; a failed
    # refork is retried after a growing pause, a failed reload is not (the
    # next HUP tries again).
    # @api private
    class Rollout
      include Monitor::Part

      attr_reader :generation

      # @param children [Children]
      # @param context [Context] its config may be replaced by a reload
      # @param spawner [Spawner]
      # @param workload [Workload]
      def initialize(children:, context:, spawner:, workload:)
        @children = children
        @context = context
        @spawner = spawner
        @workload = workload
        @generation = 0
        @newest = 0
        # Reforks since the current code was booted from config.ru: the
        # index into refork_after, so a reload (or a mold booted again)
        # starts the schedule over and its cold workers are reforked soon.
        @reforks_since_boot = 0
        # The generation of the last mold booted from config.ru: workers of
        # older generations run the code loaded before it.
        @booted_generation = 0
        @pending = nil
        @failures_by_candidate = Hash.new(0)
        @backoff = Backoff.new(base: 1.0, max: 30)
        @next_refork_at = 0.0
      end

      # @return [Boolean] whether a new mold is on its way
      def pending?
        !@pending.nil?
      end

      # @return [Boolean] whether `child` is the mold on its way
      def pending_mold?(child)
        !@pending.nil? && child.equal?(@pending)
      end

      # @return [Integer] the generation of a mold booted from config.ru to
      #   replace a dead one (the first mold is generation 0)
      def fresh_generation
        @reforks_since_boot = 0
        @generation = (@children.any? ? (@newest += 1) : @newest)
        @booted_generation = @generation
      end

      # @return [Boolean] whether a refork may be asked for now: none on its
      #   way, and past the pause after a failed one
      def refork_due?
        !pending? && Clock.now >= @next_refork_at && !@spawner.local_mold
      end

      # `refork_after`: the busiest worker of the current generation reached
      # this generation's count.
      def consider_refork
        schedule = config.refork_after
        return if pending? || Clock.now < @next_refork_at || !schedule || @spawner.local_mold

        threshold = schedule[[@reforks_since_boot, schedule.size - 1].min]
        busiest = current_workers.max_by { |child| @workload.requests(child) }
        count = busiest && @workload.requests(busiest)
        return unless count && count >= threshold
        return if waits_for_jit?(count, threshold)

        refork("#{count} requests")
      end

      # @return [Boolean] whether a promotion was asked for
      def refork(reason)
        return false if pending? || @spawner.local_mold

        candidate = promotion_candidates.first
        unless candidate
          log("refork (#{reason}): no fork-safe worker to promote; generation #{@generation} keeps serving")
          @next_refork_at = Clock.now + 5
          return false
        end
        promote(candidate, reason)
      end

      # Boots a fresh mold from config.ru; the current generation serves
      # until it is ready.
      # @return [Boolean] whether a mold was spawned
      def reload(reason)
        if pending?
          log("#{reason}: a new mold (gen #{@pending.generation}) is already booting; try again once it is ready")
          return false
        end
        @pending = @spawner.spawn_mold(@newest += 1)
        @kind = :reload
        @candidate = nil
        @context.telemetry&.rollout_started(:reload, reason,
          from_generation: @generation, generation: @pending.generation)
        log("#{reason}: booting mold (gen #{@pending.generation}) from #{config.rackup}; " \
          "generation #{@generation} serves meanwhile")
        true
      end

      # A mold said it is ready. The pending one becomes the current
      # generation: the other molds go, and roll_out replaces older workers.
      def mold_ready(mold)
        return unless pending_mold?(mold)

        @pending = nil
        @context.telemetry&.rollout_ended(mold.generation, :ready)
        @generation = mold.generation
        @reforks_since_boot = (@kind == :reload) ? 0 : @reforks_since_boot + 1
        @booted_generation = mold.generation if @kind == :reload
        @next_refork_at = 0.0
        @last_ready_at = nil # the first old worker goes at once
        @backoff.reset if @kind == :reload
        log("mold (gen #{mold.generation}) ready; replacing older workers #{pace}")
        @children.molds.each do |child|
          next if child.equal?(mold) || child.state == :stopping

          @children.stop(child)
        end
      end

      # The pending mold died or never said it was ready.
      def failed(mold, why)
        return unless pending_mold?(mold)

        @pending = nil
        @context.telemetry&.rollout_ended(mold.generation, :failed)
        if @kind == :reload
          error = @context.log
          error.error(Monitor::ROLE, "reload failed: mold (gen #{mold.generation}) #{why}" \
            "#{" (#{@last_boot_error})" if @last_boot_error}; generation #{@generation} keeps serving the code it has")
          return
        end
        @failures_by_candidate[@candidate&.pid] += 1
        delay = @backoff.failure!
        @next_refork_at = Clock.now + delay
        log("refork to generation #{mold.generation} failed (#{why}); generation #{@generation} " \
          "keeps serving; next attempt in #{delay.round(1)}s")
      end

      # Why the last mold's app did not load (its :boot_failed message).
      attr_writer :last_boot_error

      # The worker asked to fork `mold` was no longer fork safe: not a failed
      # refork (no back-off); the next warmest worker is asked at once.
      # @param running [Boolean] whether the server still runs
      def refused(mold, reason, running:)
        return unless pending_mold?(mold)

        @candidate.fork_unsafe = true
        @children.delete(mold)
        @pending = nil
        @context.telemetry&.rollout_ended(mold.generation, :refused)
        log("#{@candidate} refused promotion (not fork safe: #{reason})#{"; trying another worker" if running}")
        refork("retry") if running
      end

      # Replaces old-generation workers two ways, each within its budget:
      # - a surge: the current mold forks a worker with the old one's
      #   number, at most rollout_max_surge at a time; the old one serves
      #   until it is ready ({#worker_ready}), so capacity never drops;
      # - a stop: old workers stop (gracefully), at most
      #   rollout_max_unavailable out of service at a time, and the monitor
      #   spawns their replacements once they are gone.
      # @param target [Integer] how many workers the server runs
      # @param spawn [Boolean] whether workers may be spawned now (false
      #   while spawning fails: the recovery's pause)
      def roll_out(target, spawn: true)
        mold = current_mold
        old = @children.workers.select { |child| child.generation < @generation }
        return if old.empty? || !mold || pacing?

        # Old workers nothing replaces yet. The one that forked the new mold
        # first: its pages are shared with that mold now, so every page it
        # writes is a copy-on-write fault, for as long as it serves.
        waiting = old.select { |child| child.ready? && child.number < target && !replacement_for(child) }
          .sort_by { |child| [child.equal?(@candidate) ? 0 : 1, child.number] }
        surge(waiting, mold) if spawn
        stop(waiting.reject { |child| replacement_for(child) }, target)
      end

      # A worker said it is ready: the one it replaces (a surge) stops.
      # @param child [Child]
      def worker_ready(child)
        @last_ready_at = Clock.now if child.worker? && child.generation == @generation
        old = child.replaces or return

        child.replaces = nil
        @children.stop(old) if @children.include?(old) && old.state == :ready
      end

      # A worker to replace outside a rollout (over worker_memory_limit).
      # With rollout_max_surge, its replacement is forked first, within the
      # surge budget (or at a later call), and it stops once that one is
      # ready; without, it stops now and is replaced after.
      # @param child [Child] a ready worker
      # @param spawn [Boolean] whether workers may be spawned now
      # @return [Symbol, nil] :surge, :stop, or nil when left for later
      def replace(child, spawn:)
        return nil if replacement_for(child)
        unless config.rollout_max_surge.positive?
          @children.stop(child)
          return :stop
        end

        mold = current_mold
        return nil unless spawn && mold && surge_room.positive?

        @spawner.spawn_worker(child.number, @generation, mold, replaces: child) && :surge
      end

      # Only workers running the code of the last boot: after a HUP reload,
      # a worker of the generation before it (still serving while the roll
      # goes on) would fork a mold of the old code, and the roll would bring
      # it back.
      # @return [Array<Child>] ready fork-safe workers, the warmest first
      #   (most requests served, fewest failed promotions)
      def promotion_candidates
        @children.workers
          .select { |child| child.ready? && !child.fork_unsafe && child.generation >= @booted_generation }
          .sort_by do |child|
            [@failures_by_candidate[child.pid], (child.jit_settled == false) ? 1 : 0, -@workload.requests(child)]
          end
      end

      private

      # rollout_min_ready: the next old worker is replaced only once the
      # newest replacement has served that long. A new worker's first
      # requests cost it several times a warm one's (it copies what they
      # write and, on some VMs, pays for each page it touches the first
      # time: docs/REFORKING.md, "Pacing: `rollout_min_ready`"); spaced out,
      # that cost is spread over the roll instead of taken from one stretch
      # of it.
      def pacing?
        pause = config.rollout_min_ready
        pause.positive? && @last_ready_at && Clock.now - @last_ready_at < pause
      end

      def surge(waiting, mold)
        waiting.first(surge_room).each do |child|
          @spawner.spawn_worker(child.number, @generation, mold, replaces: child)
        end
      end

      # How many replacements may be forked ahead now.
      def surge_room
        [config.rollout_max_surge - @children.workers.count(&:replaces), 0].max
      end

      def stop(waiting, target)
        serving = @children.workers.select { |child| child.ready? && child.number < target }.map(&:number).uniq.size
        waiting.first([config.rollout_max_unavailable - (target - serving), 0].max)
          .each { |child| @children.stop(child) }
      end

      def current_mold
        @children.molds.find { |child| child.ready? && child.generation == @generation }
      end

      def replacement_for(child)
        @children.workers.find { |other| other.replaces.equal?(child) }
      end

      def pace
        "#{budgets}#{
          ", each after the last replacement served #{config.rollout_min_ready} s" if config.rollout_min_ready.positive?
        }"
      end

      def budgets
        surge, unavailable = config.rollout_max_surge, config.rollout_max_unavailable
        return "#{unavailable} at a time" if surge.zero?
        return "#{surge} at a time, each forked before the worker it replaces stops" if unavailable.zero?

        "#{surge} forked ahead and #{unavailable} out of service at a time"
      end

      # With `refork_yjit_wait N`, a refork on schedule waits while YJIT
      # still compiles in every candidate (JITWatch), up to N times the
      # schedule's count: an app whose YJIT never settles still reforks.
      def waits_for_jit?(count, threshold)
        factor = config.refork_yjit_wait or return false
        candidates = promotion_candidates
        return false if candidates.empty? || candidates.first.jit_settled != false || count >= threshold * factor

        unless @jit_wait_logged == @generation
          @jit_wait_logged = @generation
          log("refork due (#{count} requests) waits for YJIT to stop compiling in a worker " \
            "(refork_yjit_wait: up to #{threshold * factor} requests)")
        end
        true
      end

      def promote(candidate, reason)
        mold = @spawner.promote(candidate, @newest + 1)
        return false unless mold

        @newest += 1
        @pending = mold
        @kind = :refork
        @candidate = candidate
        @context.telemetry&.rollout_started(:refork, reason, from_generation: @generation, generation: mold.generation)
        log("refork (#{reason}): promoting #{candidate} with #{@workload.requests(candidate)} requests " \
          "to mold (gen #{mold.generation})")
        true
      end

      def current_workers
        @children.workers.select { |child| child.ready? && child.generation == @generation }
      end
    end
  end
end
