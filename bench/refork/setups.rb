# frozen_string_literal: true

require_relative "../reload/run"

module ReforkBench
  # Pitchfork: the newest generation's mold, and every worker on it.
  PITCHFORK_GENERATION = lambda do |running|
    running.processes.filter_map { |p| p[:generation] if p[:role] == :mold }.max
  end

  PITCHFORK_MOLD = lambda do |_log, running|
    generation = PITCHFORK_GENERATION.call(running)
    next nil unless generation&.positive?

    mold = running.processes.find { |p| p[:role] == :mold && p[:generation] == generation }
    mold && [generation, mold[:pid]]
  end

  PITCHFORK_DONE = lambda do |running, _log, workers|
    generation = PITCHFORK_GENERATION.call(running)
    next false unless generation&.positive?

    processes = running.processes
    processes.count { |p| p[:role] == :worker && p[:generation] == generation } == workers &&
      processes.none? { |p| (p[:role] == :worker && p[:generation] != generation) || p[:role] == :transient }
  end

  module_function

  # A refork by USR2 and nothing else (no refork schedule), for herd with
  # each of `herd_options` ("-" for its defaults) and, optionally, Pitchfork.
  # @return [Array<ReloadBench::Reloader>]
  def setups(herd_options, pitchfork:)
    herds = herd_options.map do |options|
      settings = ["refork_after false", options].compact.join("; ")
      server = RailsBench.herd(options ? "herd (#{options})" : "herd", settings, description: settings)
      ReloadBench::Reloader.new(server: server, signal: "USR2", done: ReloadBench::HERD_DONE,
        mold: ->(log, _running) { log.scan(ReloadBench::MOLD_READY).last&.map(&:to_i) })
    end
    return herds unless pitchfork

    base = RailsBench::SERVERS.find { |s| s.name == "pitchfork" }
    server = base.dup.tap do |s|
      s.env = {"BENCH_REFORK_AFTER" => "false"}
      s.description = "no refork_after: reforks on USR2 only (bench/rails/config/pitchfork.rb)"
    end
    herds << ReloadBench::Reloader.new(server: server, signal: "USR2", done: PITCHFORK_DONE, mold: PITCHFORK_MOLD)
  end
end
