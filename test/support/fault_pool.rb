# frozen_string_literal: true

# The pool's fault scenarios for test/faults/pool_faults_test.rb, each in a
# process of its own (so that its children and descriptors are its own):
#
#   ruby -I lib test/support/fault_pool.rb SCENARIO DIR
#
# Prints "RESULT {json}" on stdout when done: what Herd.map raised, the
# children this process still has (alive or zombie) and its descriptors
# before and after.
#
# - killed:     item 7 of 1..20 writes its pid to DIR/victim and sleeps; a
#               thread here SIGKILLs that worker (our own child)
# - raising:    item 13 of 1..30 raises ArgumentError
# - interrupts: every item prints "started ITEM PID" and sleeps; the test
#               sends SIGINTs to this process, then a line on stdin once it
#               is done. While this process is inside herd's code, INT
#               raises Interrupt as Ruby's default handler does; outside
#               it, INT is only counted, so that the process lives on to
#               look at what the interrupted Herd.map left.

require "herd"
require "json"

module Herd
  module FaultPool
    HERD_LIB = File.expand_path("../../lib/herd", __dir__)

    module_function

    def run(scenario, dir)
      GC.start # Files nobody references (RubyGems, Bundler) are closed now, not during the run
      before = descriptors
      result = send(scenario, dir)
      children = children_left
      $stdout.puts "RESULT #{JSON.generate(result.merge(children: children, fds_before: before, fds_after: descriptors))}"
      $stdout.flush
    end

    def killed(dir)
      victim = File.join(dir, "victim")
      killer = Thread.new do
        sleep 0.005 until File.exist?(victim) && !File.read(victim).empty?
        pid = Integer(File.read(victim))
        Process.kill(:KILL, pid)
        pid
      end
      outcome = capture do
        Herd.map(1..20, processes: 2) do |item|
          if item == 7
            File.write(victim, Process.pid.to_s)
            sleep 30
          end
          sleep 0.01
          done(dir, item)
        end
      end
      outcome.merge(killed: killer.value, done: count_done(dir))
    end

    def raising(dir)
      outcome = capture do
        Herd.map(1..30, processes: 2) do |item|
          raise ArgumentError, "bad item #{item}" if item == 13

          sleep 0.005
          done(dir, item)
        end
      end
      outcome.merge(done: count_done(dir))
    end

    def interrupts(_dir)
      $stdout.sync = true
      signals = 0
      trap("INT") do
        signals += 1
        raise Interrupt if caller.any? { |frame| frame.start_with?(HERD_LIB) }
      end
      outcome = capture do
        Herd.map(1..8, processes: 2) do |item|
          $stdout.puts "started #{item} #{Process.pid}"
          sleep 30
        end
      end
      $stdin.gets # the burst is over
      outcome.merge(signals: signals)
    end

    def capture
      value = yield
      {raised: nil, value: value}
    rescue Exception => e # rubocop:disable Lint/RescueException -- Interrupt included: report it
      {raised: e.class.name, message: e.message, index: (e.index if e.respond_to?(:index)),
       pid: (e.pid if e.respond_to?(:pid)), termsig: (e.status&.termsig if e.respond_to?(:status))}
    end

    def done(dir, item)
      File.write(File.join(dir, "done"), "#{item}\n", mode: "a")
      item
    end

    def count_done(dir)
      path = File.join(dir, "done")
      File.exist?(path) ? File.readlines(path).size : 0
    end

    # @return [Array<Hash>] our children, alive or zombies (never reaped)
    def children_left
      Dir.children("/proc").grep(/\A\d+\z/).filter_map do |entry|
        fields = File.read("/proc/#{entry}/stat").split(") ").last.split
        {pid: Integer(entry), state: fields[0]} if Integer(fields[1]) == Process.pid
      rescue Errno::ENOENT, Errno::ESRCH
        nil
      end
    end

    # @return [Hash{String => String}] fd => what it points to
    def descriptors
      # Dir.children's own descriptor is closed by the time it is read: skipped.
      Dir.children("/proc/self/fd").sort_by(&:to_i).filter_map do |fd|
        [fd, File.readlink("/proc/self/fd/#{fd}")]
      rescue Errno::ENOENT
        nil
      end.to_h
    end
  end
end

Herd::FaultPool.run(ARGV.fetch(0), ARGV.fetch(1)) if $PROGRAM_NAME == __FILE__
