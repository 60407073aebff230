# frozen_string_literal: true

module Bench
  # The report of a driver that keeps one result per run: the runs, and the
  # environment and options they ran with.
  class RunsReport
    def initialize(env:, runs:, options:)
      @env = env
      @runs = runs
      @options = options
    end

    private

    # A run that failed, as a table row: its setup, round and error, blank
    # cells for the rest.
    def error_row(run, columns)
      [run[:server], run[:round], "error: #{run[:error].lines.first.strip}", *Array.new(columns - 3, "")]
    end
  end
end
