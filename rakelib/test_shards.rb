# frozen_string_literal: true

require "etc"
require "json"
require "rbconfig"
require "tempfile"

# Runs test files in several Ruby processes at once: most of `rake test`'s
# time is servers being spawned and waited on, not CPU, so two shards on two
# cores finish in well under the time of one. Each shard is a process of its
# own (no threads in the tests: they fork, trap signals and set ENV), loads its
# files and runs them with minitest as Rake::TestTask would. The first
# shard's output streams; the others' follows, whole, once they end, so no
# report is interleaved. Fails when any shard fails.
#
# Files are dealt out by the seconds they took in a recorded run
# (test/shard_weights.json, rewritten by `rake test:weights`): a file's size
# or test count says little (one server test takes 3 s, a parser test 1 ms).
# A file the record does not know weighs the median.
#
# HERD_TEST_SHARDS=N sets the number (default: the CPUs, at most 2; 1 runs
# one process as Rake::TestTask does). TESTOPTS reaches every shard.
class TestShards
  ENV_COUNT = "HERD_TEST_SHARDS"
  WEIGHTS = File.expand_path("../test/shard_weights.json", __dir__)
  # What a shard runs: its files, then minitest. With HERD_TEST_TIMES set, a
  # reporter adds up each file's seconds and writes them there as JSON.
  LOADER = <<~'RUBY'
    require "minitest"
    if ENV["HERD_TEST_TIMES"]
      require "json"
      module Minitest
        class FileTimesReporter < AbstractReporter
          def initialize(path)
            super()
            @path = path
            @seconds = Hash.new(0.0)
          end

          def record(result)
            file = result.source_location.first
            @seconds[file.sub(%r{\A#{Regexp.escape(Dir.pwd)}/}, "")] += result.time
          end

          def report
            File.write(@path, JSON.generate(@seconds))
          end
        end

        def self.plugin_herd_file_times_init(_options)
          reporter << FileTimesReporter.new(ENV.fetch("HERD_TEST_TIMES"))
        end
      end
      Minitest.extensions << "herd_file_times"
    end
    ENV.fetch("HERD_SHARD_FILES").split("\n").each { |file| require File.expand_path(file) }
  RUBY

  # @return [Integer]
  def self.count(env = ENV)
    value = env[ENV_COUNT]
    return [Etc.nprocessors, 2].min if value.nil? || value.strip.empty?

    Integer(value).clamp(1, 16)
  rescue ArgumentError
    raise ArgumentError, "#{ENV_COUNT}=#{value.inspect}: give a number of test processes (1 runs a single one)"
  end

  # Runs every file once, in shards, and records each file's seconds.
  # @return [Boolean] whether every shard passed
  def self.record_weights(files, shards:)
    sharded = new(files, shards: shards, record: true)
    passed = sharded.run
    File.write(WEIGHTS, JSON.pretty_generate(sharded.recorded.sort.to_h { |file, seconds| [file, seconds.round(2)] }) + "\n")
    passed
  end

  # @return [Hash{String => Float}] seconds per file, from a run with record: true
  attr_reader :recorded

  # @param files [Array<String>]
  # @param shards [Integer]
  def initialize(files, shards:, options: ENV.fetch("TESTOPTS", "").split, record: false)
    @files = files
    @shards = [shards, files.size].min.clamp(1, nil)
    @options = options
    @record = record
    @recorded = {}
  end

  # @return [Boolean] whether every shard passed
  def run
    groups = split
    outputs = groups.drop(1).map { Tempfile.new(["herd-shard", ".log"]) }
    times = groups.map { Tempfile.new(["herd-shard-times", ".json"]) } if @record
    pids = groups.each_with_index.map do |files, index|
      spawn_shard(files, index.zero? ? $stdout : outputs[index - 1], times&.fetch(index))
    end
    statuses = pids.map { |pid| Process.wait2(pid).last }
    pids = []
    outputs.each_with_index do |output, index|
      $stdout.puts "\n== test shard #{index + 2} of #{groups.size} (#{groups[index + 1].size} files)"
      output.rewind
      IO.copy_stream(output, $stdout)
    end
    times&.each { |file| @recorded.update(JSON.parse(File.read(file.path))) if File.size?(file.path) }
    statuses.all?(&:success?)
  ensure
    pids&.each { |pid| stop(pid) }
    [*outputs, *times].each(&:close!)
  end

  private

  # Heaviest files first, each to the lightest shard so far.
  def split
    weights = recorded_weights
    known = weights.values.sort
    fallback = known.empty? ? 1.0 : known[known.size / 2]
    groups = Array.new(@shards) { [] }
    loads = Array.new(@shards, 0.0)
    @files.sort_by { |file| [-weights.fetch(file, fallback), file] }.each do |file|
      lightest = loads.index(loads.min)
      groups[lightest] << file
      loads[lightest] += weights.fetch(file, fallback)
    end
    groups.map(&:sort)
  end

  def recorded_weights
    File.exist?(WEIGHTS) ? JSON.parse(File.read(WEIGHTS)) : {}
  rescue JSON::ParserError
    {}
  end

  def spawn_shard(files, out, times)
    env = {"HERD_SHARD_FILES" => files.join("\n"), "HERD_TEST_TIMES" => times&.path}
    Process.spawn(env, RbConfig.ruby, "-Ilib", "-Itest", "-e", LOADER, "--", *@options,
      out: out, err: out, pgroup: true)
  end

  # Interrupted (Ctrl-C): a shard and the servers its tests started go with us.
  def stop(pid)
    Process.kill(:TERM, -pid)
    Process.wait(pid)
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  end
end
