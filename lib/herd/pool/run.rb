# frozen_string_literal: true

require "socket"
require_relative "batch"
require_relative "chunk_sizer"
require_relative "error_payload"
require_relative "progress"
require_relative "../clock"
require_relative "../env_switch"

module Herd
  class Pool
    # One call (map, each, any?...) over one source: hands batches to idle
    # workers, collects results, and turns every failure — an exception, a
    # dead worker, a stuck item — into an error that says which item and
    # which worker, or into a retry. One thread, one IO.select, no helper
    # threads. The workers are the pool's {Workers}: it says which are idle,
    # hands them their batches, and replaces or ends the ones the run is done with.
    # @api private
    class Run
      # How often to look at the item_board when items have a timeout, and how
      # often to poll an empty Queue source.
      TICK = 0.05
      # Otherwise: only to catch a death no EOF reports. Waking the parent
      # more often steals measurable time from workers on a busy machine.
      IDLE_TICK = 0.5
      # HERD_POOL_PREFETCH=0 sends no batch ahead (see #prefetch).
      PREFETCH_ENV = "HERD_POOL_PREFETCH"
      # The most a batch sent ahead may weigh, marshalled: a busy worker
      # reads it only once its current batch is done, so it must fit in the
      # socket's buffer with room to spare, or the write blocks this process
      # until then; and if that worker is itself blocked writing results
      # bigger than the buffer the other way, neither ever moves on.
      # Herd.map's batches are positions (a few bytes an item); a reusable
      # pool's carry the items themselves.
      AHEAD_MAX_BYTES = 8192
      # Positions in a batch that surely fit in AHEAD_MAX_BYTES (5 bytes
      # each at most, marshalled, below 2**31).
      AHEAD_POSITIONS = 1000

      # @param workers [Workers] the pool's workers
      # @param source [Source]
      # @param operation [#accept, #result]
      # @param settings [RunSettings]
      def initialize(workers, source, operation, settings, with_index:)
        @workers = workers
        @source = source
        @operation = operation
        @settings = settings
        @with_index = with_index
        @by_index = workers.forked_with?(source)
        @id = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
        @chunks = ChunkSizer.new(fixed: settings.chunk_size, total: source.size, workers: workers.size)
        @inflight = {} # the batch each worker is on
        @queued = {} # the batch sent ahead to a worker, to start when it finishes its current one
        @prefetch = prefetch_allowed?
        @warm = {} # workers that answered a batch in this run
        @attempts = Hash.new(0)
        @handed_out = 0
        @stopping = false
        @failure = nil
        @broke = false
        @next_check = 0.0
        @tick = settings.timeout ? TICK : IDLE_TICK
      end

      # @return [Object] the operation's result, or a Break's value
      def call
        drive
        outcome
      end

      private

      # Interrupts land in the loop, never between the rescue and the
      # terminate that must follow them.
      def drive
        Thread.handle_interrupt(Object => :never) do
          Thread.handle_interrupt(Object => :immediate) { loop_until_finished }
        rescue Exception # rubocop:disable Lint/RescueException
          # Ctrl-C, TERM, a raising callback: no worker may outlive this.
          @workers.terminate
          raise
        end
      end

      def loop_until_finished
        @progress = Progress.build(@settings.progress, @source.size)
        @workers.begin_call(@settings.timeout)
        until finished?
          sent = @stopping ? 0 : dispatch
          break if finished?

          wait_for_results(sent)
          supervise
        end
        @progress.finish
      end

      def finished?
        @inflight.empty? && (@stopping || @source.exhausted?)
      end

      def outcome
        raise @failure if @failure
        return @break_value if @broke

        @operation.result
      end

      # Every idle worker's batch is taken before any is sent, so each knows
      # whether it is the last one its worker gets; then the batches sent
      # ahead ({#prefetch}), after the batch each worker is to start first.
      # @return [Integer] items handed out
      def dispatch
        plans = []
        @workers.idle(@inflight).each do |worker|
          size = [@chunks.next_size(@handed_out), @workers.quota(worker)].min
          pairs = @source.take(size)
          break if pairs.empty?

          @handed_out += pairs.size
          plans << [worker, pairs]
        end
        ahead = prefetch(plans)
        last = last_batches?(plans)
        # Workers forked by their batch go first, all of them, before any
        # start: callback: its output (a progress line, "running") and the
        # Ctrl-C it may prompt then find every fork of the round done, as
        # when a pool forked its workers when made.
        forked = plans.select { |worker, _| @workers.unforked?(worker) }
        forked.each { |worker, pairs| hand_out(worker, pairs, last) }
        plans.each do |worker, pairs|
          pairs.each { |index, item| @settings.start.call(item, index) } if @settings.start
          hand_out(worker, pairs, last) unless forked.any? { |other, _| other.equal?(worker) }
          collect(worker) unless worker.io
        end
        ahead.each { |worker, pairs| hand_out(worker, pairs, false, queued: true) }
        (plans + ahead).sum { |_, pairs| pairs.size }
      end

      # A worker that finishes a batch otherwise waits for this process to
      # wake up (with cold caches), read its results and send the next: twice
      # as long as with the parallel gem, whose thread per worker does less
      # (docs/POOL.md, "Batches sent ahead"). So a busy worker is sent its
      # next batch ahead, and finds it in its socket. Only while the batches
      # left are many (at least two per worker after this one): the tail is
      # shared out one batch at a time as before, so no worker sits on a batch
      # another could start. Workers given a batch in this very round count as
      # busy: workers of equal items finish together, and are collected by the
      # same wake-up; counting only those busy before it, such a pair never
      # got a batch ahead.
      # @param plans [Array<Array(worker, Array)>] this round's first batches
      # @return [Array<Array(worker, Array)>] the batches to send ahead
      def prefetch(plans)
        return [] unless @prefetch && @chunks.estimated?

        busy = @inflight.keys + plans.filter_map { |worker, _| worker unless @workers.unforked?(worker) }
        busy.filter_map do |worker|
          next if !@prefetch || @queued.key?(worker) || worker.retiring?

          size = @chunks.next_size(@handed_out)
          next unless @source.size - @handed_out >= size * (@workers.size * 2 + 1)

          pairs = @source.take(size)
          next if pairs.empty?
          next give_back_ahead(pairs) unless fits_ahead?(worker, pairs)

          @handed_out += pairs.size
          [worker, pairs]
        end
      end

      def fits_ahead?(worker, pairs)
        return true if @by_index && pairs.size <= AHEAD_POSITIONS # a few bytes each, marshalled

        @ahead_limit ||= begin
          [AHEAD_MAX_BYTES, worker.io.getsockopt(Socket::SOL_SOCKET, Socket::SO_SNDBUF).int / 2].min
        rescue SystemCallError, IOError, NoMethodError
          AHEAD_MAX_BYTES
        end
        Marshal.dump(batch_message(pairs, false)).bytesize <= @ahead_limit
      end

      # Items this big go one batch at a time for the rest of the run.
      def give_back_ahead(pairs)
        @prefetch = false
        @source.retry(pairs)
        nil
      end

      # Sent ahead only where nothing else hangs on the moment a batch
      # starts: process workers (their socket holds the batch), a source of
      # known size (the tail rule), no per-item timeout (it watches the
      # batch a worker is on), no start: callback (called as an item is
      # handed out, it would fire a batch early), no max_items_per_worker
      # (a worker replaced between its batches would take the one queued
      # for it along).
      def prefetch_allowed?
        @workers.kind == :process && !@source.size.nil? && @settings.timeout.nil? && @settings.start.nil? &&
          !@workers.recycles? && !EnvSwitch.off?(ENV[PREFETCH_ENV])
      end

      # A one-call pool's workers exit on their own after a batch that leaves
      # the source exhausted: no stop message, no wake-up to read it, and the
      # exit overlaps the parent's collecting. Items handed back later (a
      # retry) go to the fresh worker that replaces a dead one, or to one
      # forked for them (#finish_batch). Only a source of known size says so
      # for free: an enumerator would have to make its next item (#peek)
      # before these batches leave, and a slow one would hold them back.
      def last_batches?(plans)
        !plans.empty? && !@stopping && @workers.retires? && !@source.size.nil? && @source.exhausted?
      end

      def hand_out(worker, pairs, last, queued: false)
        message = batch_message(pairs, last)
        # The item_board's count is what a timeout watches; nothing else reads it.
        seen = @settings.timeout ? @workers.item_board.started(worker.number) : 0
        (queued ? @queued : @inflight)[worker] = Batch.new(pairs, Clock.now, seen)
        @workers.dispatch(worker, message) || worker_died(worker)
      end

      def batch_message(pairs, last)
        [:batch, @id, @with_index, !@settings.timeout.nil?, pairs.map(&:first),
          (@by_index ? nil : pairs.map(&:last)), last]
      end

      # Every object the parent makes while workers share its pages lands in
      # a free slot of a page the fork write-protected: a page fault each
      # time it reaches a new page. Hence one hash here, not two arrays and
      # a hash per wake-up.
      def wait_for_results(sent)
        by_io = {}
        @inflight.each_key { |worker| (io = worker.io) && (by_io[io] = worker) }
        if by_io.empty?
          # Nothing in flight: an inline run already has its answers, unless
          # the source had nothing to give (a Queue, empty for now).
          sleep(TICK) if sent.zero? && @inflight.empty?
          return
        end

        ready, = IO.select(by_io.keys, nil, nil, @tick)
        ready&.each do |io|
          worker = by_io.fetch(io)
          collect(worker) if @inflight.key?(worker) # an earlier one may have stopped the run
        end
      end

      def collect(worker)
        messages, gone = worker.read_ready
        messages.each { |message| receive(worker, *message) }
        worker_died(worker) if gone && @inflight.key?(worker)
      end

      def receive(worker, _kind, run_id, entries, done, busy = nil)
        if run_id.nil? # the worker failed before its first item (after_fork raised)
          return fail!(load_error(entries.first[2], worker, nil))
        end
        return unless run_id == @id && (batch = @inflight[worker])

        entries.each do |entry|
          # A timeout or a stop may have taken the batch away mid-message.
          break unless @inflight[worker].equal?(batch)

          settle(worker, batch, *entry)
        end
        finish_batch(worker, batch, busy) if done && @inflight[worker].equal?(batch)
      end

      def settle(worker, batch, index, status, value)
        item = batch.pairs[batch.answered]&.last
        batch.answered += 1
        case status
        when :ok then succeed(index, item, value)
        when :break then stop_with_break(value)
        when :error then fail!(load_error(value, worker, index))
        when :unserializable then fail!(unserializable(worker, index, value))
        when :timeout
          batch.answered -= 1
          timed_out(worker, batch, index)
        end
      end

      def succeed(index, item, value)
        @progress.increment
        @settings.finish&.call(item, index, value)
        stop! if @operation.accept(index, value) == :stop
      end

      # Batches are sized by the time the worker spent on them: timed from
      # here, the round trip made every batch of slow-ish items look twice
      # as slow on a loaded machine (docs/POOL.md, "Cost per call"), and
      # batches stuck at one or two items, a round trip each.
      def finish_batch(worker, batch, busy = nil)
        start_queued(worker)
        # A worker's first batch also measures its start-up (its first
        # copy-on-write faults), not only its items.
        @chunks.record(batch.size, busy || (Clock.now - batch.sent_at)) if @warm.key?(worker)
        @warm[worker] = true
        @workers.served(worker, batch.answered)
        return if @stopping

        @source.retry(batch.unanswered) if batch.answered < batch.size
        # Items came back after this worker was told it had its last batch.
        @workers.replace(worker) if worker.retiring? && !@source.exhausted?
      end

      def worker_died(worker)
        # What it sent before dying (results, or why it could not start)
        # explains more than its exit status does.
        messages, = worker.read_ready
        messages.each { |message| receive(worker, *message) }
        # One that answered its last batch exited as it was told to.
        return if worker.retiring? && !@inflight.key?(worker)

        status = worker.reap
        batch = @inflight.delete(worker)
        hand_back_queued(worker)
        # Read before #replace marks the slot idle for the new worker: the
        # dead one's last word is the only record of the item it was on.
        index = culprit(worker, batch)
        @workers.replace(worker) unless @stopping && @workers.one_call?
        return unless batch && !@stopping

        error = WorkerDied.new(
          "#{worker} #{worker.describe_exit(status)} while working on item #{index} " \
          "(#{preview(batch.item(index))})#{retry_advice(index)}",
          status: status.is_a?(Process::Status) ? status : nil, index: index, pid: worker.pid,
          worker_number: worker.number
        )
        retry_or(batch, index, error) { fail!(error) }
      end

      # The batch sent ahead becomes the one the worker is on: it starts now.
      def start_queued(worker)
        queued = @queued.delete(worker)
        return @inflight.delete(worker) unless queued

        @inflight[worker] = queued
        queued.sent_at = queued.progress_at = Clock.now
      end

      # A dead or killed worker's batch sent ahead goes back to the source
      # untouched: it never started.
      def hand_back_queued(worker)
        queued = @queued.delete(worker)
        @source.retry(queued.pairs) if queued && !@stopping
      end

      # The item the item_board names, if this batch still owes its answer (a
      # worker that died before starting an item left the slot idle, one that
      # died after answering left its last item there); else the first
      # unanswered one.
      def culprit(worker, batch)
        return nil unless batch

        index = @workers.item_board.current_item(worker.number)
        return index if index && batch.unanswered.any? { |pair| pair.first == index }

        batch.unanswered.first&.first
      end

      # Every tick: stuck items, and deaths that no EOF reported (a grandchild
      # of the worker may hold its socket open).
      def supervise
        return if Clock.now < @next_check

        @next_check = Clock.now + @tick
        @inflight.to_a.each do |worker, batch|
          next worker_died(worker) if worker.pid && worker.exited?

          check_timeout(worker, batch) if @settings.timeout
        end
      end

      def check_timeout(worker, batch)
        started = @workers.item_board.started(worker.number)
        if started != batch.seen_started
          batch.seen_started = started
          batch.progress_at = Clock.now
        elsif Clock.now - batch.progress_at > @settings.timeout &&
            (index = @workers.item_board.current_item(worker.number))
          timed_out(worker, batch, index)
        end
      end

      def timed_out(worker, batch, index)
        worker.kill
        worker.reap
        @inflight.delete(worker)
        hand_back_queued(worker)
        @workers.replace(worker)
        error = TimeoutError.new(
          "item #{index} (#{preview(batch.item(index))}) ran longer than the #{@settings.timeout}s timeout on " \
          "#{worker}; the worker was killed and replaced",
          seconds: @settings.timeout, index: index, pid: worker.pid, worker_number: worker.number
        )
        retry_or(batch, index, error) do
          next fail!(error) unless @settings.on_timeout == :continue

          batch.answered += 1 # the stuck item counts as answered, with the error as its result
          succeed(index, batch.item(index), error)
          @source.retry(batch.unanswered)
        end
      end

      # Hands the unanswered items back when the culprit has retries left.
      def retry_or(batch, index, error)
        if @attempts[index] < @settings.retries
          @attempts[index] += 1
          @source.retry(batch.unanswered)
        else
          yield error
        end
      end

      def retry_advice(index)
        return "; pass retries: N to retry an item whose worker dies" if @settings.retries.zero?

        " after #{@attempts[index]} #{(@attempts[index] == 1) ? "retry" : "retries"}"
      end

      def stop_with_break(value)
        @broke = true
        @break_value = value
        stop!
      end

      def fail!(error)
        @failure ||= error
        stop!
      end

      # No new batches; workers drop the rest of theirs after the current item.
      # A one-call pool (Herd.map) ends them instead: nobody needs them.
      def stop!
        @stopping = true
        @inflight.each_key { |worker| @workers.item_board.cancel(worker.number) }
        return unless @workers.one_call?

        @workers.halt(@inflight.keys)
        @inflight.clear
        @queued.clear
      end

      def load_error(value, worker, index)
        error = value.is_a?(Exception) ? value : ErrorPayload.load(value)
        where = "(herd) raised in #{worker}#{" on item #{index}" if index}"
        error.set_backtrace(Array(error.backtrace) + [where]) unless error.frozen?
        error
      end

      def unserializable(worker, index, detail)
        SerializationError.new(
          "the result of item #{index} could not be sent back from #{worker} (#{detail}); " \
          "return plain data (strings, numbers, arrays, hashes, Structs) from the block",
          index: index, pid: worker.pid, worker_number: worker.number
        )
      end

      def preview(item)
        text = item.inspect
        (text.length > 80) ? "#{text[0, 77]}..." : text
      end
    end
  end
end
