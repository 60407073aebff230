# frozen_string_literal: true

# The floor for bench/cow.rb, run in a fresh Ruby by the driver:
#
#   bundle exec ruby bench/cow/floor.rb APP.ru REQUESTS FORKS SERVING
#
# Loads the app, serves REQUESTS requests in-process (what one of 4 workers
# serves during the warm-up), runs a full GC and samples its PSS alone: one
# warmed process. Then prepares the heap as herd's mold does
# (Herd::Heap.prepare with seal_malloc: true, which gives the pages of
# malloc's free chunks back) and samples it again: one warmed process at its
# smallest. Then forks FORKS children that serve one request each and wait, and samples the tree: what
# each extra process costs at least (its USS). One more fork, alone, serves
# one request and runs one minor GC, and reports its USS before and after:
# what a fork's first GC copies (pages of malloc's heap, about one per Ruby
# heap page: the GC writes to every heap page's descriptor). Then the children serve
# SERVING requests in all and the tree is sampled again: what plain forks of
# a warmed process cost once they serve, under Ruby's GC settings. Prints
# JSON on stdout.

$LOAD_PATH.unshift File.expand_path("../../lib", __dir__)
require "io/wait"
require "json"
require "herd/heap"
require "herd/memory"
require_relative "in_process"

app_path, requests, forks, serving = ARGV
requests = Integer(requests)
forks = Integer(forks)
serving = Integer(serving)

serve = CowBench::InProcess.server(app_path)

started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
requests.times { serve.call }
warm_seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
GC.start(full_mark: true, immediate_sweep: true)
solo = Herd::Memory.sample

Herd::Heap.prepare(seal_malloc: true)
sealed = Herd::Memory.sample
first_gc = lambda do
  reader, writer = IO.pipe
  pid = Process.fork do
    reader.close
    serve.call
    before = Herd::Memory.sample.uss
    GC.start(full_mark: false, immediate_sweep: true)
    writer.write(JSON.generate(before: before, after: Herd::Memory.sample.uss))
    exit!(0)
  end
  writer.close
  figures = JSON.parse(reader.read, symbolize_names: true)
  Process.wait(pid)
  figures
end.call
ready_reader, ready_writer = IO.pipe
go_reader, go_writer = IO.pipe
go = -> { go_reader.sysread(1) rescue nil } # standard:disable Style/RescueModifier
children = Array.new(forks) do
  Process.fork do
    ready_reader.close
    go_writer.close
    serve.call
    ready_writer.write(".")
    # One byte each, unbuffered (IO#read may take every child's byte at
    # once); EOF when the parent is done.
    exit!(0) unless go.call
    (serving - 1).times { serve.call }
    ready_writer.write(".")
    go.call
    exit!(0)
  end
end
ready_writer.close
go_reader.close
DEADLINE = 300 # seconds for the forks to answer, so that a fork that died fails the run
sample = lambda do
  answers = +""
  while answers.size < forks
    abort "floor.rb: #{forks - answers.size} fork(s) did not answer within #{DEADLINE} s" unless ready_reader.wait_readable(DEADLINE)
    answers << (ready_reader.readpartial(forks - answers.size) rescue abort("floor.rb: a fork died")) # standard:disable Style/RescueModifier
  end
  sleep 0.5 # let the children's writes settle before sampling
  Herd::Memory.tree(Process.pid)
end
idle = sample.call
go_writer.write("." * forks)
served = sample.call
go_writer.close
children.each { |pid| Process.wait(pid) }

mib = ->(bytes) { (bytes / 1048576.0).round(2) }
uss = ->(tree) { tree.rows.drop(1).map { |row| mib.call(row.sample.uss) } }
puts JSON.generate(
  requests: requests, warm_seconds: warm_seconds.round(2), serving: serving,
  solo_pss: mib.call(solo.pss), solo_rss: mib.call(solo.rss), solo_uss: mib.call(solo.uss),
  sealed_pss: mib.call(sealed.pss),
  first_gc: {uss_before: mib.call(first_gc[:before]), uss_after: mib.call(first_gc[:after])},
  tree_pss: mib.call(idle.total.pss), children: uss.call(idle).map { |value| {uss: value} },
  served_tree_pss: mib.call(served.total.pss), served_children: uss.call(served).map { |value| {uss: value} }
)
