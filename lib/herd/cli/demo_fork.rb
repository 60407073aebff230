# frozen_string_literal: true

require_relative "command"
require_relative "../fork/hook"
require_relative "../memory"
require_relative "../heap/steps"

module Herd
  class CLI
    # `herd demo fork`: shows copy-on-write sharing with real numbers. Builds a heap
    # of young objects, forks children with a plain fork and then with herd's,
    # lets each child run one GC (as any child soon does), and prints the
    # memory of the process tree each time with `herd mem --tree`'s table.
    class DemoFork < Command
      BANNER = "Usage: herd demo fork [--objects N] [--children N]"

      private

      def call(options)
        build_heap(options[:objects])
        ForkHook.install
        plain = measure("plain fork", options[:children], ->(child) { Process.fork(prepare_heap: false, &child) })
        prepared = measure("herd's fork", options[:children],
          ->(child) { ForkHook.with_heap_preparation { Process.fork(&child) } })
        summarize(plain, prepared)
        0
      end

      def parse(argv)
        options = {objects: 1_000_000, children: 2}
        parse_options(argv.dup, options) do |opts|
          opts.on("--objects N", Integer,
            "young objects to build in the parent (default 1,000,000)") { |n| options[:objects] = n }
          opts.on("--children N", Integer, "children per kind of fork (default 2)") { |n| options[:children] = n }
        end
        return options if options[:help]
        raise UsageError, "--objects must be at least 1000" if options[:objects] < 1000
        raise UsageError, "--children must be between 1 and 16" unless (1..16).cover?(options[:children])

        options
      end

      def build_heap(count)
        GC.disable # as after loading an application: many objects, all still young
        @heap = Array.new(count) { |i| [i, "object #{i}"] }
        GC.enable
        Process.setproctitle("herd demo parent")
        @out.puts "Built #{count} young objects; parent PSS #{Memory::Table.humanize(Memory.sample.pss)}.", ""
      end

      # Forks the children, waits until each has run its GC, and reads the tree.
      # @return [Memory::Report] the children's rows only
      def measure(label, count, fork_with)
        reader, writer = IO.pipe
        child = proc do
          reader.close
          Process.setproctitle("herd demo child (#{label})")
          GC.start
          writer.write("ready\n")
          sleep # until the parent has measured
        end
        pids = Array.new(count) { fork_with.call(child) }
        writer.close
        count.times { reader.gets }
        report = Memory.tree(Process.pid)
        @out.puts "After one GC in each child, #{label}:", report.to_table, ""
        Memory::Report.new(report.rows.select { |row| pids.include?(row.pid) }, tree: true)
      ensure
        reader&.close
        pids&.each { |pid| Process.kill(:KILL, pid) }
        pids&.each { |pid| Process.wait(pid) }
      end

      def summarize(plain, prepared)
        per_plain = plain.total.private_dirty / plain.rows.size
        per_herd = prepared.total.private_dirty / prepared.rows.size
        @out.puts format("Each child copied %s after a plain fork and %s after herd's fork (%.1fx less; %s).",
          Memory::Table.humanize(per_plain), Memory::Table.humanize(per_herd),
          per_plain.to_f / [per_herd, 1].max, Heap::Steps.ruby)
        @out.puts "Measure any process tree the same way: herd mem PID --tree"
      end
    end
  end
end
