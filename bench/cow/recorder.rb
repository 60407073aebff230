# frozen_string_literal: true

require_relative "../support/clock"
require_relative "../support/sampler"

module CowBench
  # Every process's PSS every INTERVAL s through a run (ab warm-up, the
  # pause, settling, the more-requests rounds), for the report's plot
  # (Bench::Plot): seconds since the warm-up's ab started. Also when each
  # phase ended, and, for a server whose titles do not show its generation
  # (Puma fork_worker), the sample at which its log first showed a new one.
  class Recorder
    INTERVAL = 0.25

    def initialize(server, process)
      @server = server
      @process = process # HttpBench::ServerProcess
      @phases = []
      @rollouts = []
      @generation = nil
    end

    def start
      @started = Bench::Clock.now
      @sampler = Bench::Sampler.new(@process.pid, interval: INTERVAL, titles: true) { |sample| watch(sample) }.start
      self
    end

    # Notes that a phase ended now.
    # @param label [String] e.g. "ab", "settled"
    def phase(label)
      @phases << [label, seconds(Bench::Clock.now)]
    end

    # Stops sampling (one last sample first).
    # @return [Hash] :recording ([[seconds, [[title, PSS MiB], ...]], ...]), :phases ([[label, seconds], ...]),
    #   :rollouts ([[seconds, generation, why], ...], when the log tells)
    def stop
      return {} unless @sampler

      @sampler.stop
      recording = @sampler.samples.select { |sample| sample[:rows] }
        .map { |sample| [seconds(sample[:t]), sample[:rows].map { |_, title, pss| [title, pss] }] }
      {recording: recording, phases: @phases, rollouts: (@rollouts unless @rollouts.empty?)}.compact
    end

    private

    def seconds(t)
      (t - @started).round(2)
    end

    def watch(sample)
      return unless @server.log_generation

      generation = @server.log_generation.call(log)
      @rollouts << [seconds(sample[:t]), generation, "from the log"] if @generation && generation != @generation
      @generation = generation
    end

    def log
      File.read(@process.log_path)
    rescue SystemCallError
      ""
    end
  end
end
