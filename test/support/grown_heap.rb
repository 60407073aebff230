# frozen_string_literal: true

module Herd
  # The heap the page-descriptor tests start from (test/heap/page_descriptors*_test.rb).
  module GrownHeap
    SUPPORTED = Herd::Heap::PageDescriptors.unsupported.nil?

    # A heap grown the way an app's grows: object pages added one at a time
    # between mallocs (strings longer than a slot), so that each page's
    # descriptor lands apart from the others.
    GROW = <<~RUBY
      require "herd"
      $keep = Array.new(300_000) { |i| "a string longer than one slot can hold, number \#{i}" }
      GC.start
      spread = lambda do
        descriptors = ObjectSpace.each_object(String).map { |s| Fiddle::Pointer.new(Fiddle.dlwrap(s) & -16384)[0, 8].unpack1("J") }.uniq
        descriptors.map { |d| d / 4096 }.uniq.size
      end
      private_dirty = -> { File.read("/proc/self/smaps_rollup")[/^Private_Dirty:\\s+(\\d+)/, 1].to_i }
      first_gc = lambda do
        GC.start
        reader, writer = IO.pipe
        pid = fork do
          before = private_dirty.call
          GC.start(full_mark: false, immediate_sweep: true)
          writer.write(private_dirty.call - before)
          exit!(0)
        end
        writer.close
        Process.wait(pid)
        Integer(reader.read)
      end
    RUBY
  end
end
