# frozen_string_literal: true

require "etc"
require "rbconfig"

module Bench
  # The machine's KSM daemon (ksmd): whether it runs, how it scans, and the
  # CPU it has used, so a bench can say what merging pages cost.
  module KSM
    DIR = "/sys/kernel/mm/ksm"
    EXEC = File.expand_path("ksm_exec.rb", __dir__)

    module_function

    # @return [Hash, nil] run, pages_to_scan, sleep_millisecs, advisor_mode; nil without KSM
    def settings
      return unless File.directory?(DIR)

      %w[run pages_to_scan sleep_millisecs advisor_mode].to_h { |name| [name.to_sym, read(File.join(DIR, name))] }
    end

    # @return [Boolean] whether ksmd merges pages now
    def running? = settings&.dig(:run) == "1"

    # @return [Float] seconds of CPU ksmd has used (0.0 when there is none)
    def cpu_seconds
      pid = Dir.glob("/proc/[0-9]*/comm").find { |path| read(path) == "ksmd" }
      return 0.0 unless pid

      fields = File.read(pid.sub("comm", "stat")).split(") ", 2).last.split
      (fields[11].to_i + fields[12].to_i) / Etc.sysconf(Etc::SC_CLK_TCK).to_f
    rescue SystemCallError
      0.0
    end

    # @return [String, nil] a sysfs or procfs file's text, stripped; nil if it went away
    def read(path)
      File.read(path).strip
    rescue SystemCallError
      nil
    end

    # @param command [Array<String>]
    # @return [Array<String>] the command run with merging asked for
    def wrap(command) = [RbConfig.ruby, EXEC, *command]
  end
end
