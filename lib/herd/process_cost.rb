# frozen_string_literal: true

require_relative "clock"

module Herd
  # What a step cost this process: wall time, CPU time and, on Linux, minor
  # page faults. In a process just forked, the faults are mostly
  # copy-on-write copies of pages shared with its parent, and on a
  # virtualized host they can cost more than the step's own work
  # (docs/REFORKING.md), so a log line that shows them says where the time
  # went.
  # @api private
  class ProcessCost
    STAT = "/proc/self/stat"

    # @yield the step
    # @return [Array(Object, ProcessCost)] the block's value and its cost
    def self.measure
      cost = new
      value = yield
      [value, cost.finish]
    end

    def initialize
      @wall = Clock.now
      @cpu = cpu_now
      @faults = faults_now
    end

    # @return [self]
    def finish
      @wall = Clock.now - @wall
      @cpu = cpu_now - @cpu
      now = faults_now
      @faults = (now && @faults) ? now - @faults : nil
      self
    end

    # @return [String] e.g. "454 ms; 180 ms CPU, 1834 page faults"
    def to_s
      text = "#{ms(@wall)} ms; #{ms(@cpu)} ms CPU"
      @faults ? "#{text}, #{@faults} page faults" : text
    end

    private

    def ms(seconds) = (seconds * 1000).round

    def cpu_now
      Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
    end

    # minflt, the 10th field of /proc/self/stat (the 8th after the command
    # name, which may hold spaces and parentheses).
    def faults_now
      File.read(STAT).split(") ", 2).last.split[7].to_i
    rescue SystemCallError, NoMethodError
      nil # not Linux
    end
  end
end
