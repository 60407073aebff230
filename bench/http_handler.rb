# frozen_string_literal: true

# What herd's HTTP layer costs per request in Ruby, without the network:
# Herd::HTTP::Handler#call on an in-memory socket that hands over a hello
# world GET and swallows the response, the way a worker calls it (the
# reader made at accept). CPU µs and objects allocated per request, each
# variant in a fresh process, variants interleaved. On a shared machine this
# is the steadiest figure of the hot path; bench/http.rb gives the whole
# server under wrk.
#
#   bundle exec ruby bench/http_handler.rb [--reps N] [--requests N] [--baseline REF]
#
# --baseline REF also measures lib/ at git revision REF (git archive).
# Writes bench/results/http_handler.md and .json.

require "optparse"
require "rbconfig"
require "tmpdir"
require "shellwords"
require_relative "support/report"

# The measurement, run in a child process with the variant's lib/ first on the load path.
MEASURE = <<~'RUBY'
  require "rack"
  require "herd"
  require "herd/http"
  class MemorySocket
    REQUEST = "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n".b.freeze
    def reset = (@sent = false) || self
    def read_nonblock(_max, buffer = nil, exception: true)
      return :wait_readable if @sent
      @sent = true
      buffer ? buffer.replace(REQUEST) : REQUEST.dup
    end
    def write(*strings) = strings.sum(&:bytesize)
    def close = nil
    def closed? = false
  end
  app = ->(_env) { [200, {"content-type" => "text/plain", "content-length" => "14"}, ["Hello, world!\n"]] }
  handler = Herd::HTTP::Handler.new(app, Herd::HTTP::Options.new)
  socket = MemorySocket.new
  worker_like = Herd::HTTP::SocketReader.method_defined?(:head_decided?)
  call = lambda do
    socket.reset
    if worker_like
      reader = Herd::HTTP::SocketReader.new(socket, 30)
      reader.head_decided?(8192, 65536)
      handler.call(socket, remote_addr: "127.0.0.1", server_name: "127.0.0.1", server_port: "8080", reader: reader)
    else
      handler.call(socket, remote_addr: "127.0.0.1", server_name: "127.0.0.1", server_port: "8080")
    end
  end
  requests = Integer(ARGV.fetch(0))
  5000.times { call.call }
  GC.start
  objects = GC.stat(:total_allocated_objects)
  started = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
  requests.times { call.call }
  cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - started
  puts "#{cpu * 1e6 / requests} #{(GC.stat(:total_allocated_objects) - objects).fdiv(requests)}"
RUBY

command = Bench::Report.command_line($PROGRAM_NAME, ARGV)
options = {reps: 7, requests: 100_000}
OptionParser.new do |opts|
  opts.on("--reps N", Integer, "runs per variant (default 7)") { |n| options[:reps] = n }
  opts.on("--requests N", Integer, "requests per run (default 100000)") { |n| options[:requests] = n }
  opts.on("--baseline REF", "also measure lib/ at this git revision") { |ref| options[:baseline] = ref }
end.parse!

root = Bench::Report::ROOT
variants = {"herd (#{Bench::Report.git_revision})" => File.join(root, "lib")}
tmp = nil
if options[:baseline]
  tmp = Dir.mktmpdir("herd-#{options[:baseline]}")
  system("git archive #{options[:baseline].shellescape} lib | tar -x -C #{tmp.shellescape}", chdir: root) or abort "bench/http_handler: git archive #{options[:baseline]} failed"
  variants["herd@#{options[:baseline]}"] = File.join(tmp, "lib")
end
runs = Hash.new { |hash, key| hash[key] = [] }
options[:reps].times do
  variants.each do |name, lib|
    out = IO.popen([RbConfig.ruby, "-I", lib, "-e", MEASURE, options[:requests].to_s], err: File::NULL, &:read)
    cpu, objects = out.split.map(&:to_f)
    abort "bench/http_handler: #{name} failed" unless cpu
    runs[name] << {cpu_us: cpu, objects: objects}
    warn format("%-28s %.2f µs %.1f objects", name, cpu, objects)
  end
end
FileUtils.rm_rf(tmp) if tmp

rows = runs.map do |name, list|
  cpu = list.map { |r| r[:cpu_us] }
  [name, format("%.2f", cpu.min), Bench::Stats.range(Bench::Stats.summary(cpu), "%.2f"), format("%.1f", list.first[:objects])]
end
env = Bench::Report.environment(command).merge(loadavg: Bench::Report.loadavg)
markdown = <<~MD
  # HTTP handler: CPU and objects per request, without the network

  #{Bench::Report.environment_markdown(env)}- load average at the end: #{env[:loadavg]} (2 cores shared with other work: the minimum is the
    steadiest figure, the median shows the noise)

  `Herd::HTTP::Handler#call` on an in-memory socket (hello world GET with a Host header in, response
  swallowed), reader made first as the worker does; #{options[:requests]} requests per run after 5,000 of warm-up,
  #{options[:reps]} runs per variant, each in a fresh process, variants interleaved. No syscalls: what the Ruby
  code of the HTTP layer costs. The worker adds accept, getpeername, the scoreboard and its loop.

  #{Bench::Report.markdown_table(["variant", "CPU µs/request (min)", "median (min–max)", "objects/request"], rows)}
MD
paths = Bench::Report.write("http_handler", markdown: markdown, data: {environment: env, options: options, runs: runs})
warn "wrote #{paths.join(" and ")}"
