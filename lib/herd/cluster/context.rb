# frozen_string_literal: true

module Herd
  module Cluster
    # What hooks receive as `server`: the configuration, the log, and the
    # monitor's pid.
    # (`scoreboard` is herd's own, shared by the monitor and the workers;
    # `telemetry` is the monitor's counters, see Telemetry.)
    Context = Struct.new(:config, :log, :monitor_pid, :scoreboard, :telemetry, keyword_init: true)

    # What hooks receive as `worker`.
    WorkerInfo = Struct.new(:number, :generation, :pid, :requests, keyword_init: true) do
      # @return [String] "worker 0 (gen 1)", as the log names it
      def to_s
        "worker #{number} (gen #{generation})"
      end
    end

    # What hooks receive as `mold`.
    MoldInfo = Struct.new(:generation, :pid, keyword_init: true) do
      # @return [String] "mold (gen 1)", as the log names it
      def to_s
        "mold (gen #{generation})"
      end
    end
  end
end
