# frozen_string_literal: true

module Herd
  module Cluster
    # Notices code a worker loads after its fork and says so once.
    #
    # A file a worker requires while serving (a lazy `require`, an
    # `autoload` first reached by a request) is loaded by every worker for
    # itself: its instructions and tables are private memory in each, where
    # the mold could have loaded them once for all. On Ruby 3.1 the cost is
    # larger than the file: a constant defined anywhere invalidates every
    # constant cache of the process, so the worker then rewrites the caches
    # of all the code it runs, pages it copies from the mold (Rack's form
    # parser was such a file, which RackAutoloads now loads in the mold;
    # docs/COPY_ON_WRITE.md, "Code loaded after the fork"). The remedy is
    # the user's: require the file in the app or in config/herd.rb, or
    # reach it with a `warmup` request (a Sinatra app builds its middleware
    # on its first request).
    #
    # Checked after each request: one Array#size while nothing is loaded,
    # and nothing at all once reported.
    # @api private
    class LateLoads
      # Files named in the log line at most.
      SHOWN = 4

      # Call after the worker's own after_fork hooks (what they load, the
      # user chose to load per worker) and before its warm-up.
      def initialize(features = $LOADED_FEATURES)
        @features = features
        @size = features.size
        @carried = []
      end

      # Runs the block; what it loads is not counted (the after_worker_ready
      # hooks: the user chose to load that per worker). What was loaded
      # before it is kept for the next {#check}, and counting starts again
      # after it, whatever the block did to the list.
      def excluding
        carried = @size && @features.drop(@size)
        yield
      ensure
        if carried
          @carried.concat(carried)
          @size = @features.size
        end
      end

      # @return [String, nil] the log line, once: when files were loaded since
      def check
        size = @features.size
        return nil if @size.nil? || (size == @size && @carried.empty?)

        # Features taken out ($LOADED_FEATURES.delete, to load a file again): count from here.
        late = @carried + ((size < @size) ? [] : @features.drop(@size))
        @size = size
        @carried = []
        return nil if late.empty?

        @size = nil
        describe(late)
      end

      private

      def describe(late)
        names = late.first(SHOWN).map { |path| short(path) }
        names << "..." if late.size > SHOWN
        them = (late.size == 1) ? "it" : "them"
        "#{late.size} file#{"s" unless late.size == 1} loaded after the fork, by this worker for itself " \
          "(#{names.join(", ")}): require #{them} in the app or in config/herd.rb, or reach #{them} with a " \
          "`warmup` request, so that the mold loads #{them} once for every worker#{constant_caches_note}"
      end

      # What follows a gem's lib/ is what one would require.
      def short(path)
        path.to_s.split("/lib/", 2).last
      end

      def constant_caches_note
        return "" unless RubyVM.respond_to?(:stat) && RubyVM.stat.key?(:global_constant_state)

        " (on this Ruby, code loaded in a worker also makes it rewrite, and copy, every constant cache " \
          "it runs; docs/COPY_ON_WRITE.md, \"Code loaded after the fork\")"
      end
    end
  end
end
