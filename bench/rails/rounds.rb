# frozen_string_literal: true

require "tmpdir"
require_relative "app"
require_relative "../http/support"
require_relative "../support/report"

module RailsBench
  module_function

  # What the drivers on the Rails app share (bench/rails, bench/reload,
  # bench/refork): the app built once in a scratch directory, each setup
  # run once per round, setups interleaved and their order rotating each
  # round, and the environment header with the load average at the end.
  # @param name [String] the driver's name, for errors and the scratch directory
  # @param command [String] the command line, for the header
  # @yield [setup, round, template, work] one run; the block returns its result
  # @return [Array(Hash, Array<Hash>)] the environment and the runs
  def rounds(name, command, setups, rounds)
    missing = missing_bundle
    abort "bench/#{name}: #{missing}" if missing
    env = environment(command)
    started = Bench::Clock.now
    runs = []
    Dir.mktmpdir("bench-#{name}") do |work|
      app = template(work)
      env.merge!(settings(app))
      (1..rounds).each do |round|
        setups.rotate(round - 1).each { |setup| runs << yield(setup, round, app, work) }
      end
    end
    env[:loadavg_end] = Bench::Report.loadavg
    env[:seconds] = (Bench::Clock.now - started).round
    [env, runs]
  end
end
