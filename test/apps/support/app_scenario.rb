# frozen_string_literal: true

require "test_helper"
require "securerandom"
require "support/procfs"
require_relative "app_server"

module Herd
  # What test/apps/*_test.rb share: serve an app with `refork_after`, drive
  # real requests through reforks, then stop the server and check what a
  # user would look at. Every request is tallied (sent, ok, failed with the
  # reason); every check is reported, passing or not, before the test fails
  # on the first failing ones.
  module AppScenario
    Request = Struct.new(:id, :label, :error)

    # Raised by a request's own expectations.
    class Unexpected < StandardError; end

    FORK_WARNING = "inherited from a forked process"

    def setup
      super
      @requests = []
      @run = SecureRandom.hex(4) # not rand: minitest seeds it, every test would get the same
      @checks = []
      @notes = []
    end

    def teardown
      @server&.cleanup
      super
    end

    # A fresh X-Request-Id, unique in this run (letters, digits and dashes:
    # Rails keeps it as it is).
    def next_id
      "herd-#{@run}-#{@requests.size + 1}"
    end

    # Sends one request (the block), records it; the block raises on
    # anything unexpected. Never raises itself.
    # @return [Object, nil] the block's value, nil when it failed
    def request(label)
      id = next_id
      entry = Request.new(id, label, nil)
      @requests << entry
      yield id
    rescue => e
      entry.error = "#{e.class}: #{e.message}"
      nil
    end

    def expect(condition, message)
      raise Unexpected, message unless condition
    end

    def failed_requests
      @requests.select(&:error)
    end

    # Records a check and its details for the report.
    def check(name, passed, details = "")
      @checks << [name, passed, details]
      passed
    end

    # The whole scenario of an app test: serve the app with `workers`,
    # refork_after [20, 40, 60] and the `warmup` paths (as docs/RAILS.md
    # configures an app: without them each first-generation worker loads
    # what the app loads on its first request, and says so), drive it
    # through `reforks` reforks and a few more visits on the last
    # generation, then check everything and report. The block is one visitor.
    # @param more_config [String] more settings for herd.rb
    # @param more_checks [#call, nil] called before the report, to record checks of the test's own
    def serve_through_reforks(app:, env:, workers:, reforks:, title:, warmup:, more_config: "", more_checks: nil, &visit)
      config = "workers #{workers}\nrefork_after [20, 40, 60]\nwarmup #{warmup.map(&:inspect).join(", ")}\n#{more_config}"
      @server = Herd::AppServer.new(app: app, config: config, env: env)
      @iteration = 0
      generations = through_reforks(workers: workers, reforks: reforks, &visit)
      5.times(&visit) # the last generation serves
      check_requests
      check_descriptors(generations)
      check_graceful_stop
      check_log_lines
      check_no_fork_warning
      check_no_thread_warning
      check_no_late_loads
      more_checks&.call
      report!(title)
    end

    # @return [String] the version of `gem` in the apps bundle
    def bundled_version(gem)
      File.read("#{Herd::AppServer::GEMFILE}.lock")[/^    #{gem} \(([^)]+)\)/, 1]
    end

    # Drives traffic (the block sends a few requests) until the monitor
    # promotes a worker, then waits, with no traffic, until the new
    # generation has replaced the old one, and measures its descriptors.
    # Repeats for `reforks` reforks.
    # @return [Hash{Integer => Hash}] generation => {mold: [targets], workers: {number => [targets]}, pids: {...}}
    def through_reforks(workers:, reforks: 3, max_requests_per_refork: 600)
      generations = {0 => generation_descriptors(0, workers)}
      current = 0
      reforks.times do
        mark = @server.mark
        sent = @requests.size
        until @server.lines.drop(mark).any? { |line| line.match?(/refork \(\d+ requests\): promoting worker \d+ \(gen #{current}\)/) }
          if @requests.size - sent > max_requests_per_refork
            raise Minitest::Assertion, "no refork after #{max_requests_per_refork} requests on generation #{current}; log:\n#{@server.lines.join}"
          end

          yield
        end
        mold = @server.wait_for(/monitor: mold \(gen (\d+)\), pid (\d+) ready/, after: mark)
        generation = Integer(mold[1])
        old = @server.ready_pids.select { |key, _| key.last == current }.values
        workers.times { |number| @server.wait_for(/monitor: worker #{number} \(gen #{generation}\), pid \d+ ready/, after: mark) }
        old.each { |pid| @server.wait_for(/pid #{pid} exited/, after: mark) }
        @notes << "refork to generation #{generation} after #{@requests.size - sent} requests"
        generations[generation] = generation_descriptors(generation, workers)
        current = generation
      end
      generations
    end

    # Open descriptors of a generation's mold and workers, idle, right
    # after that generation has replaced the previous one.
    def generation_descriptors(generation, workers)
      workers.times { |number| @server.wait_for(/monitor: worker #{number} \(gen #{generation}\), pid \d+ ready/) }
      pids = @server.ready_pids
      mold = pids.fetch([:mold, generation])
      {
        pids: {mold: mold, workers: Array.new(workers) { |number| pids.fetch([:worker, number, generation]) }},
        mold: Procfs.descriptors(mold),
        workers: Array.new(workers) { |number| Procfs.descriptors(pids.fetch([:worker, number, generation])) }
      }
    end

    # Descriptor counts must not grow from one refork to the next
    # (generation 1 on: generation 0's mold never served a request).
    def check_descriptors(generations)
      rows = generations.sort.map do |generation, found|
        "gen #{generation}: mold pid #{found[:pids][:mold]} #{found[:mold].size} fds, workers " +
          found[:pids][:workers].zip(found[:workers]).map { |pid, fds| "pid #{pid} #{fds.size}" }.join(", ")
      end
      growth = []
      generations.keys.sort.each_cons(2) do |before, after|
        next if before.zero?

        [[:mold, nil], *Array.new(generations[after][:workers].size) { |n| [:workers, n] }].each do |kind, number|
          old = number ? generations[before][kind].fetch(number, []) : generations[before][kind]
          new = number ? generations[after][kind][number] : generations[after][kind]
          next if new.size <= old.size

          growth << "#{number ? "worker #{number}" : "mold"} gen #{before} -> #{after}: #{old.size} -> #{new.size} fds, new: #{multiset_minus(new, old).tally.inspect}"
        end
      end
      first, second = generations.keys.sort.first(2)
      if second
        rows << "gen #{first} -> #{second} mold (not checked): new #{multiset_minus(generations[second][:mold], generations[first][:mold]).tally.inspect}"
      end
      check("descriptor counts flat across reforks (gen 1 on)", growth.empty?, (rows + growth).join("\n"))
    end

    def multiset_minus(left, right)
      rest = right.tally
      left.select do |item|
        next true unless rest[item].to_i.positive?

        rest[item] -= 1
        false
      end
    end

    # QUIT; the monitor exits 0, every pid its log named is gone, the port is free.
    def check_graceful_stop
      pids = @server.logged_pids
      status = @server.stop
      left = pids.select { |pid| Procfs.alive?(pid) }
      port_free = !Procfs.listening?(@server.port) && begin
        TCPServer.new("127.0.0.1", @server.port).close
        true
      rescue Errno::EADDRINUSE
        false
      end
      check("QUIT: monitor exits 0", status.respond_to?(:success?) && status.success?, "status #{status.inspect}")
      check("QUIT: every logged pid gone", left.empty?, "#{pids.size} pids logged; left: #{left.inspect}")
      check("QUIT: port #{@server.port} free", port_free, port_free ? "" : "something still listens on #{@server.port}")
    end

    def check_no_fork_warning
      found = (@server.stdout_lines + @server.lines).grep(/#{FORK_WARNING}/o)
      check("no sqlite3 \"#{FORK_WARNING}\" warning", found.empty?, found.first(3).join)
    end

    # A stock app's threads start again by themselves in a worker (Solid
    # Cache's pool, ActiveRecord's reaper): the mold's advice would be a false alarm.
    def check_no_thread_warning
      found = @server.lines.grep(/thread\(s\) started at boot/)
      check("no warning about threads started at boot", found.empty?, found.first(3).join)
    end

    # Code a worker loads while serving is loaded by every worker for
    # itself (Herd::Cluster::LateLoads says so in the log): Rack's form
    # parser was, on each worker's first POST, until the mold loaded it.
    def check_no_late_loads
      found = @server.lines.grep(/loaded after the fork/)
      check("no worker loads code after its fork", found.empty?, found.first(3).join)
    end

    def check_requests
      failed = failed_requests
      check("0 failed requests", failed.empty?, failed.first(20).map { |r| "#{r.id} #{r.label}: #{r.error}" }.join("\n"))
    end

    # Prints the report, then fails with it if any check failed.
    def report!(title)
      failed = failed_requests
      text = "\n== #{title}: #{@requests.size} requests sent, #{@requests.size - failed.size} ok, #{failed.size} failed\n"
      @notes.each { |note| text << "   #{note}\n" }
      @checks.each do |name, passed, details|
        text << "   #{passed ? "PASS" : "FAIL"} #{name}\n"
        details.to_s.each_line { |line| text << "        #{line.chomp}\n" } unless details.to_s.empty?
      end
      text << "   server files kept in #{@server.dir}\n" if ENV["HERD_KEEP_APP_DIRS"] == "1"
      puts text
      failing = @checks.reject { |_, passed, _| passed }.map(&:first)
      assert failing.empty?, "failed: #{failing.join("; ")}#{text}"
    end
  end
end
