# frozen_string_literal: true

require "rbconfig"

module PoolBench
  # What this machine allows any fork pool, measured in the same run as
  # herd: the leanest dynamic pool there is. The parent writes every item's
  # position into one pipe up front; each child reads 4-byte positions from
  # it (reads of at most PIPE_BUF bytes are atomic, so no two children take
  # the same one) until it is empty, and writes `[position, result]` to its
  # own pipe. No batching, no supervision, no error handling, no heap
  # preparation: a ceiling to judge herd's speedup by, not a pool to use.
  #
  # Why it is needed: on the 2-vCPU VM herd is benchmarked on, one vCPU ran
  # this load 1.6-1.9x slower than the other for minutes at a time, and which
  # one flipped (bench/results/pool-ceiling.md). Two workers then cannot reach
  # 2x whoever forks them; a target judged against the sequential run alone
  # would measure the neighbours on the host.
  module BareForks
    POSITION = "L" # 4 bytes, well under PIPE_BUF
    LENGTH = "N"

    module_function

    # @return [Array] work.call(item) for every item, in order
    def map(items, workers:, &work)
      raise ArgumentError, "at most #{64 * 1024 / 4} items (the pipe holds every position)" if items.size > 64 * 1024 / 4

      positions, feeder = IO.pipe
      feeder.write([*0...items.size].pack("#{POSITION}*"))
      feeder.close
      children = Array.new(workers) { spawn_child(items, positions, work) }
      positions.close
      results = Array.new(items.size)
      collect(children, results)
      results
    end

    def spawn_child(items, positions, work)
      reader, writer = IO.pipe
      pid = fork do
        reader.close
        loop do
          position = positions.sysread(4).unpack1(POSITION) # unbuffered: IO#read would take others' positions too
          payload = Marshal.dump([position, work.call(items[position])])
          writer.write([payload.bytesize].pack(LENGTH), payload)
        rescue EOFError
          break
        end
        writer.close
        exit!(0)
      end
      writer.close
      [reader, pid]
    end

    def collect(children, results)
      buffers = children.to_h { |reader, _| [reader, +"".b] }
      open = buffers.keys
      until open.empty?
        IO.select(open).first.each do |reader|
          chunk = reader.read_nonblock(1 << 16, exception: false)
          next if chunk == :wait_readable

          chunk.nil? ? open.delete(reader) : buffers[reader] << chunk
        end
      end
      buffers.each_value { |buffer| unpack(buffer, results) }
    ensure
      children.each do |reader, pid|
        reader.close
        Process.wait(pid)
      end
    end

    def unpack(buffer, results)
      offset = 0
      while offset < buffer.bytesize
        length = buffer.byteslice(offset, 4).unpack1(LENGTH)
        position, value = Marshal.load(buffer.byteslice(offset + 4, length)) # standard:disable Security/MarshalLoad -- our own children
        results[position] = value
        offset += 4 + length
      end
    end

    # Seconds per item of `rounds` of the CPU load on each CPU alone, each
    # measured in a fresh Ruby pinned with taskset(1); nil where taskset is
    # missing. Shows a lopsided machine for what it is.
    # @return [Hash{Integer => Float}, nil]
    def per_cpu_seconds(rounds, items: 8)
      return nil unless system("taskset", "--version", out: File::NULL, err: File::NULL)

      script = "require #{File.expand_path("loads", __dir__).dump}; " \
        "PoolBench::Loads.cpu(#{rounds}); t = Process.clock_gettime(Process::CLOCK_MONOTONIC); " \
        "#{items}.times { PoolBench::Loads.cpu(#{rounds}) }; " \
        "print((Process.clock_gettime(Process::CLOCK_MONOTONIC) - t) / #{items})"
      (0...Etc.nprocessors).to_h do |cpu|
        output = IO.popen(["taskset", "-c", cpu.to_s, RbConfig.ruby, "-e", script], &:read)
        [cpu, Float(output)]
      end
    end
  end
end
