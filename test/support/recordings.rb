# frozen_string_literal: true

require "json"

module Herd
  # Synthetic `herd mem --record` lines, for the plot's tests.
  module Recordings
    MIB = 1024 * 1024

    # A herd server sampled every second: a monitor, a mold and 2 workers
    # of generation `gen`, the sizes in MiB per role.
    def server_report(second, gen:, monitor: 10, mold: 20, workers: 50, rollouts: nil)
      processes = [
        {pid: 1, ppid: 0, title: "herd monitor", pss: monitor * MIB},
        {pid: 2 + gen * 10, ppid: 1, title: "herd mold (gen #{gen})", pss: mold * MIB},
        {pid: 3 + gen * 10, ppid: 1, title: "herd worker 0 (gen #{gen}) requests=5", pss: workers / 2 * MIB},
        {pid: 4 + gen * 10, ppid: 1, title: "herd worker 1 (gen #{gen}) requests=9", pss: workers / 2 * MIB}
      ]
      report = {time: Time.at(1_700_000_000 + second).utc.strftime("%Y-%m-%dT%H:%M:%S.%LZ"), tree: true, processes: processes}
      report[:rollouts] = rollouts if rollouts
      JSON.generate(report)
    end

    def write_recording(path, lines)
      File.write(path, lines.join("\n") + "\n")
      path
    end
  end
end
