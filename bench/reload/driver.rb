# frozen_string_literal: true

require "json"
require_relative "../support/report"

module ReloadBench
  # What the drivers of bench/reload and bench/refork share around their
  # runs: the --herd-options list, and their results printed and written
  # (or written again from an earlier run's JSON, --report-only).
  module Driver
    module_function

    # @param list [String] ';'-separated herd settings, one setup each; '-' for the defaults;
    #   '\;' separates two settings of one setup ("rollout_max_surge 1\; rollout_max_unavailable 0")
    # @return [Array<String, nil>]
    def herd_options(list)
      list.split(/(?<!\\);/).map { |o| (o.strip == "-") ? nil : o.strip.gsub("\\;", ";") }
    end

    # @param report [Class] the driver's report (.new(env:, runs:, options:).markdown)
    # @param notes [String] what ends the report (Bench::Report.notes)
    def publish(report, notes, env, runs, opts)
      Bench::Report.publish(opts[:name], markdown: report.new(env: env, runs: runs, options: opts).markdown,
        notes: notes, environment: env, options: opts, runs: runs)
    end

    # Rewrites the results of an earlier run from its JSON, under `name`.
    def report_only(path, name, report, notes)
      data = JSON.parse(File.read(path), symbolize_names: true)
      publish(report, notes, data[:environment], data[:runs], data[:options].merge(name: name))
    end
  end
end
