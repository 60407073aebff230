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
# JSON on stdout. A fork that raises or ends before its time fails the run
# at once, with the fork's error on the last line of stderr.

$LOAD_PATH.unshift File.expand_path("../../lib", __dir__)
require "json"
require "herd/heap"
require "herd/memory"
require_relative "in_process"

app_path, requests, forks, serving = ARGV
requests = Integer(requests)
forks = Integer(forks)
serving = Integer(serving)

DEADLINE = 300 # seconds for the forks to answer, so that a fork that hangs fails the run

# A fork of this process and the parent's ends of its own two pipes: it
# writes "." on ready each time it has served, and reads go for a byte (serve
# more) or its EOF (exit). One pair per fork, so that no fork can take the
# byte meant for another (with one go pipe for all, a fork that had served
# its requests could read another's byte as its signal to exit, which left
# that one waiting for good and the parent waiting for its answer: nearly
# always with SERVING 1), and so that a fork that dies is seen at once (EOF
# on its ready pipe).
Child = Struct.new(:pid, :ready, :go)

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

# Forks a child that runs the block and exits 0, closing `others` first.
# A child that raises prints its error, writes "!" and its message on
# `report` for the parent to fail with, and exits 1.
def fork_child(report, others)
  Process.fork do
    others.each(&:close)
    yield
    exit!(0)
  rescue Exception => error # standard:disable Lint/RescueException
    warn error.full_message(highlight: false)
    begin
      report.write("!#{error.class}: #{error.message.lines.first.to_s.chomp}")
    rescue SystemCallError, IOError
    end
    exit!(1)
  end
end

# What a fork that failed said ("!" and its error) or, at EOF, how it ended.
def failure(child, answer)
  said = (answer == "!") ? child.ready.read.to_s : nil
  status = Process.wait2(child.pid).last
  child.pid = nil
  said ? "fork #{status.pid} failed (#{status}): #{said}" : "fork #{status.pid} ended before it answered (#{status})"
end

# Kills the forks still there and fails the run with `message`.
def fail_run(children, message)
  children.each do |child|
    next unless child.pid

    Process.kill(:KILL, child.pid)
    Process.wait(child.pid)
  rescue Errno::ESRCH, Errno::ECHILD
  end
  abort "floor.rb: #{message}"
end

# Reads one "." from each fork; fails the run as soon as one fails or
# ends, or when one has not answered within DEADLINE.
def await(children)
  deadline = now + DEADLINE
  pending = children.dup
  until pending.empty?
    readable, = IO.select(pending.map(&:ready), nil, nil, [deadline - now, 0].max)
    fail_run(children, "#{pending.size} fork(s) did not answer within #{DEADLINE} s") unless readable
    readable.each do |io|
      child = pending.find { |candidate| candidate.ready == io }
      answer = io.read_nonblock(1, exception: false)
      next if answer == :wait_readable

      (answer == ".") ? pending.delete(child) : fail_run(children, failure(child, answer))
    end
  end
end

serve = CowBench::InProcess.server(app_path)

started = now
requests.times { serve.call }
warm_seconds = now - started
GC.start(full_mark: true, immediate_sweep: true)
solo = Herd::Memory.sample

Herd::Heap.prepare(seal_malloc: true)
sealed = Herd::Memory.sample
first_gc = lambda do
  reader, writer = IO.pipe
  pid = fork_child(writer, [reader]) do
    serve.call
    before = Herd::Memory.sample.uss
    GC.start(full_mark: false, immediate_sweep: true)
    writer.write(JSON.generate(before: before, after: Herd::Memory.sample.uss))
  end
  writer.close
  said = reader.read
  reader.close
  status = Process.wait2(pid).last
  abort "floor.rb: the first-GC fork #{pid} failed (#{status}): #{said.delete_prefix("!")}" unless status.success?
  JSON.parse(said, symbolize_names: true)
end.call

ready_pipes = Array.new(forks) { IO.pipe }
go_pipes = Array.new(forks) { IO.pipe }
children = ready_pipes.zip(go_pipes).map do |(ready_reader, ready_writer), (go_reader, go_writer)|
  others = (ready_pipes + go_pipes).flatten - [ready_writer, go_reader]
  pid = fork_child(ready_writer, others) do
    serve.call
    ready_writer.write(".")
    next unless go_reader.read(1) # EOF: the parent is done
    (serving - 1).times { serve.call }
    ready_writer.write(".")
    go_reader.read # until EOF: the parent has sampled
  end
  Child.new(pid, ready_reader, go_writer)
end
ready_pipes.each { |_reader, writer| writer.close }
go_pipes.each { |reader, _writer| reader.close }
sample = lambda do
  await(children)
  sleep 0.5 # let the children's writes settle before sampling
  Herd::Memory.tree(Process.pid)
end
idle = sample.call
children.each do |child|
  child.go.write(".")
rescue Errno::EPIPE # it is gone: await says how
end
served = sample.call
children.each { |child| child.go.close }
children.each do |child|
  status = Process.wait2(child.pid).last
  child.pid = nil
  fail_run(children, "fork #{status.pid} failed (#{status}) after it answered") unless status.success?
end

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
