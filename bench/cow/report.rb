# frozen_string_literal: true

require_relative "../support/report"

module CowBench
  # bench/results/cow.md: the environment, what was measured, the tables.
  class Report
    # @param plots [Hash] app name -> its SVG's file name under bench/results (Bench::Plot)
    def initialize(env:, summary:, apps:, options:, plots: {})
      @env = env
      @summary = summary
      @apps = apps
      @options = options
      @plots = plots
    end

    # A plot's panel title: the server, and when each phase of its run ended
    # (seconds since the warm-up's first request).
    # @param run [Hash] a run with :phases (Runner, Recorder)
    # @return [String]
    def self.panel_name(run)
      at = ->(label) { run[:phases]&.reverse&.find { |name, _| name == label }&.last&.then { |s| format("%.1f s", s) } }
      parts = [("warm-up ab until #{at.call("ab")}" if at.call("ab")), ("settled at #{at.call("settled")}" if at.call("settled"))]
      parts << "+#{run[:more][:requests]} requests, settled at #{at.call("more settled")}" if run[:more] && at.call("more settled")
      parts.compact!
      parts.empty? ? run[:server].to_s : "#{run[:server]}: #{parts.join(", ")}"
    end

    def markdown
      @markdown ||= <<~MD
        # Copy-on-write under load: Σ PSS of a whole server after Pitchfork's warm-up

        #{Bench::Report.environment_markdown(@env)}- servers: #{@env[:servers].map { |name, version| "#{name} #{version}" }.join(", ")}; rack #{@env[:rack]}
        - ab #{@env[:ab]}: `#{@env[:ab_command]}`#{more_note}
        - load average (1/5/15 min) at start: #{@env[:loadavg_start]}, at end: #{@env[:loadavg_end]}
        - whole run: #{@env[:seconds]} s

        ## What is measured

        Pitchfork's memory benchmark (its `benchmark/cow_benchmark.rb`): a server with 4 workers, warmed with
        `ab -c 4 -n #{@options[:requests]}`, then Σ PSS of every process of the server (monitor or master,
        mold, workers: `Herd::Memory.tree`, which walks `/proc/PID/task/*/children` of every thread, so
        Puma's workers forked from a non-main thread count) and the median worker's PSS and USS. Three
        seconds after ab, Σ PSS is taken once as Pitchfork's own benchmark times it ("Run to run" table:
        a rollout may still be under way); the `measuring` app is Pitchfork's example as its benchmark
        runs it, and for it the driver also fetches one response and reads the figure the app took
        inside the request, as Pitchfork's benchmark prints it. Then the driver waits until the server runs 4 workers of its
        newest generation, nothing is forking, the log agrees (herd: the newest mold and every worker logged "ready", no promotion
        under way; Puma: every worker booted in the newest refork phase) and that stayed so for 1 s;
        at most 60 s, and a run that did not settle says so. Every repetition starts each server afresh;
        servers are interleaved and their order rotates. Medians over #{@options[:reps]} repetitions, min–max in
        brackets, sizes in MiB (2^20 bytes).

        #{server_list}

        Apps (`RACK_ENV=production`):

        #{@apps.map { |app| "- `#{app.name}` (`#{app.rackup}`): #{app.description}" }.join("\n")}

        ## Results

        #{@summary.markdown}
        #{more_tables}#{plots_markdown}
        ### The floor

        #{@summary.floors_markdown}
        The floor is what #{WORKERS + 1} app processes and a monitor cost if nothing but each fork's own work were
        private: one process that loaded the app and served #{@options[:requests] / WORKERS} requests (one worker's share of
        the warm-up), at its smallest: after a full GC, and with the pages of malloc's free chunks given
        back to the kernel (`Herd::Heap.prepare(seal_malloc: true)`, what herd's mold does; the column
        before shows it without), PSS alone; plus #{WORKERS} forks of it that served one request each, USS;
        plus herd's monitor PSS (it never loads the app). "Floor from the unsealed process" is the same
        sum from the process before sealing, the floor as the issue words it ("one warmed process's PSS
        plus the idle cost of the extra processes"); both ratios are in the targets. `bench/cow/floor.rb`
        measures it in a fresh Ruby every repetition, with herd's GC settings (`RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO=0.25`). One more fork serves one request and runs one minor
        GC: its USS then is what a fork's first GC copies (pages of malloc's heap, about one per Ruby heap page: the
        GC writes to every heap page's descriptor; docs/COPY_ON_WRITE.md). The last two
        columns are the same forks once each has served #{[@options[:more], 1].max} requests: what plain
        forks of a warmed process cost while serving, under Ruby's default GC settings.

        ### Targets

        Σ PSS of the whole server, median over the repetitions; "steady" is after the more requests.

        #{@summary.targets_markdown}
        ### Run to run

        #{@summary.spread_markdown}
        ### Processes of the median run

        #{@apps.map { |app| %w[herd herd-ruby-gc pitchfork pitchfork-gc].map { |name| @summary.processes_markdown(name, app) }.join("\n") }.join("\n")}
        ### Notes

        #{NOTES}

        ### Every repetition

        #{@summary.raw_markdown}
      MD
    end

    NOTES = <<~MD.chomp
      - Booting leaves malloc's free chunks all over the mold's heap (55 MiB in 79,000 chunks on the
        constant-cache app). Unless the mold takes them before it forks, every worker's mallocs
        reuse them and copy the shared pages they lie in: about 300 KiB per request on the
        `measuring` app. herd's mold seals them (`Herd::Heap::Malloc.seal_free_chunks`, since 42f1cfc)
        and gives the whole pages inside back to the kernel; that is also why herd's total can be
        below one warmed process that did not.
      - Reforking is what matters: Puma and Unicorn preloaded keep every worker's copy of what the
        app builds or writes after boot (caches, memoized data), reforking servers share it.
      - The reading inside a request sums the PSS of the worker's parent and the parent's children,
        as Pitchfork's example app does. It agrees with the driver's for herd, Pitchfork, Puma and
        Unicorn preloaded, whose workers are children of the monitor or master; Puma fork_worker forks
        workers 1–3 from worker 0, so a request served by one of them counts worker 0 and its
        children only (about 64 MiB).
      - A measurement right after a refork flatters whoever reforked last: the new workers have
        served nothing yet. The "3 s after ab" column is Pitchfork's own timing (a rollout may still
        be under way: Puma's refork stops and forks its workers one by one); the "after more
        requests" tables are taken once the generation measured has served requests of its own.
      - herd's mold promotes young objects and compacts its heap before its first fork (since
        4bb5ae5; it used to fill free slots with placeholders instead, which a promoted mold, whose
        heap holds all the garbage its worker left, turned into a heap with no room for every
        worker). Compaction gathers the free slots into pages of their own, but Ruby 3.1 keeps
        those pages until more than 65% of the heap is free, and a worker fills them with its
        garbage before its next GC. Since e14ce73 herd runs its processes with
        `RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO=0.25` unless it is set, so that the GC releases them
        (`herd-ruby-gc` runs with Ruby's 0.65; before e14ce73 the variant with 0.25 was
        `herd-tuned`). Since d31bb89 a herd worker also collects between requests once
        it has allocated 100,000 objects (`out_of_band_gc`, 200,000 before d2a86f9, unless Ruby's own GC is due sooner), so
        its garbage stays in the pages it already copied.
      - The first mold of a reforking herd server gives malloc's free pages back without sealing
        the chunks (since 3199c1f): its workers' warm-up mallocs fill the boot's holes, and the
        worker promoted to the next mold is as compact as a process warmed in one go.
      - Since 2aa8ea4 herd's monitor re-executes itself without RubyGems and Bundler (the lean
        monitor): 5.3 MiB of PSS instead of 12.7, and the floor counts it. How many of malloc's free
        chunks a mold ends with moves with the code layout (anything that allocates before or during
        the boot): herd on the constant-cache app measured 223.5 MiB at 2aa8ea4 and 227.8 at
        8029b67, which changed only the log's timestamp formatting and a warning; perturbing the
        layout by hand gave 219–233 MiB (docs/COPY_ON_WRITE.md, "Where the holes fall").
      - Since be1c3a1 a worker leaves no C-memory garbage per look at its link to the monitor
        (`recvmsg` allocated 68 KiB each time) and no `Addrinfo` per connection: the mold promoted
        from such a worker no longer carries that garbage as holes (constant-cache app 221.2 ->
        215.0 MiB, measuring 244.7 -> 236.6).
      - The `lazy` app allocates on every request (about 30,000 objects: 5,000 strings and a pair
        per entry of a 20,000-entry Hash#count), so its workers' private memory grows with the
        requests they serve until they collect; the constant-cache app allocates almost nothing
        once its caches are filled.
    MD

    private

    def server_list
      <<~MD.chomp
        Servers (config files in `bench/cow/`):

        - `herd`: `herd serve APP -c bench/cow/herd.rb` (`workers 4`, `refork_after [50, 100, 1000]`,
          and herd's defaults: `rollout_max_unavailable 1`, `out_of_band_gc 100_000`);
        - `herd-ruby-gc`: the same with `RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO=0.65` in its environment,
          Ruby's default, which herd otherwise lowers to 0.25 (`bench/cow/herd_ruby_gc.rb`);
        - `pitchfork`: `pitchfork -c bench/cow/pitchfork.rb APP` (`worker_processes 4`,
          `refork_after [50, 100, 1000]`, as its own benchmark's `examples/pitchfork.conf.minimal.rb`);
        - `pitchfork-gc`: the same with `RUBY_GC_HEAP_FREE_SLOTS_MAX_RATIO=0.25`, herd's setting;
        - `puma-fork_worker`: `puma -C bench/cow/puma_fork_worker.rb` (`workers 4`, `threads 1, 1`,
          `fork_worker 100`, `preload_app! false`: Puma 8 would otherwise also load the app in its master);
        - `puma`: `workers 4`, `threads 1, 1`, `preload_app!`;
        - `unicorn`: `worker_processes 4`, `preload_app true`.#{baseline_note}
      MD
    end

    def baseline_note
      ref = @options[:baseline]
      return "" unless ref

      "\n- `herd@#{ref}`: `herd` as it was at git revision #{ref} (its lib/ and exe/, its C extension built), " \
        "same config and bundle."
    end

    def plots_markdown
      return "" if @plots.empty?

      pictures = @plots.map { |app, file| "`#{app}`:\n\n![#{app} app: Σ PSS over time, by role, one panel per server](#{file})\n" }
      <<~MD.chomp

        ### Σ PSS over time

        Each server's first repetition, every process's PSS recorded every #{Recorder::INTERVAL} s from the warm-up's first
        request to the last measurement (`Bench::Sampler`, drawn by herd plot's `Herd::Plot::SVG`): stacked by role
        (monitor or master, mold, workers; a Puma or Unicorn master that preloaded the app is the "monitor" band), the
        total as a black line, a red dashed line where a new generation appeared (from the process titles; Puma
        fork_worker's refork phases from its log). Each panel's title says when the warm-up's ab ended, when the rollout
        settled, and when the more-requests rounds did; every panel of a picture has the same axes.

        #{pictures.join("\n")}
      MD
    end

    def more_note
      return "" unless @env[:more].positive?

      "; then `ab` with `-n #{@env[:more]}` and settle, again until a round goes by without a refork " \
        "(at most #{Runner::MORE_ROUNDS}), and measure again"
    end

    def more_tables
      return "" unless @env[:more].positive?

      "\nAfter the generation measured has served #{@env[:more]} requests of its own (`ab -n #{@env[:more]}` rounds until " \
        "one goes by without a refork, then settled):\n\n#{@summary.markdown(phase: :more)}"
    end
  end
end
