# frozen_string_literal: true

require "etc"

module Herd
  # How many CPUs this process may really use.
  module CPU
    class << self
      # The smaller of the CPUs in this process's affinity mask (Etc.nprocessors
      # honours sched_getaffinity) and its cgroup CPU quota, rounded up, at
      # least 1. `HERD_PROCESSES` overrides it.
      # @return [Integer]
      def count(env: ENV, cgroup_root: "/sys/fs/cgroup")
        override = env["HERD_PROCESSES"]
        return parse_override(override) if override && !override.empty?

        [Etc.nprocessors, cgroup_limit(cgroup_root)].compact.min.clamp(1, nil)
      end

      # @return [Integer, nil] the cgroup quota in CPUs, rounded up; nil when unlimited
      def cgroup_limit(root)
        quota, period = read_v2(root) || read_v1(root)
        return nil unless quota && period&.positive? && quota.positive?

        # A quota of 1.5 CPUs still lets two processes run half the time each;
        # rounding down to 1 would leave work on the table, and never to 0.
        (quota.to_f / period).ceil
      end

      private

      def parse_override(value)
        Integer(value, 10).tap { |n| raise ArgumentError if n.negative? }
      rescue ArgumentError
        raise Error, "HERD_PROCESSES must be a whole number >= 0, got #{value.inspect}"
      end

      def read_v2(root)
        text = File.read(File.join(root, "cpu.max")).split
        return nil if text.first == "max"

        text.map(&:to_i)
      rescue SystemCallError
        nil
      end

      def read_v1(root)
        quota = File.read(File.join(root, "cpu", "cpu.cfs_quota_us")).to_i
        period = File.read(File.join(root, "cpu", "cpu.cfs_period_us")).to_i
        [quota, period]
      rescue SystemCallError
        nil
      end
    end
  end
end
