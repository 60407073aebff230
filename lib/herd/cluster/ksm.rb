# frozen_string_literal: true

require_relative "../env_switch"
require_relative "../linux"

module Herd
  module Cluster
    # The `ksm` setting: the monitor asks the kernel to merge identical
    # anonymous pages (Kernel Samepage Merging) for itself and, since the
    # request is inherited on fork, for every mold and worker it starts.
    # It takes back what forking alone cannot keep shared: pages a worker
    # writes with the bytes they already had, such as YJIT's records of
    # the mold's code at a worker's first major GC (docs/COPY_ON_WRITE.md,
    # "Merging identical pages: `ksm`").
    #
    # The kernel's daemon, ksmd, does the merging, and only an administrator
    # turns it on (/sys/kernel/mm/ksm/run); herd asks, and says in the log
    # what it found. HERD_KSM=1 or =0 turns it on or off whatever the config says.
    # @api private
    class KSM
      SWITCH_ENV = "HERD_KSM"
      SYSFS = "/sys/kernel/mm/ksm"

      # @param log [Log]
      # @param role [String]
      # @param env [Hash] the environment (tests pass their own)
      # @param sysfs [String] where the kernel shows ksmd's state
      def initialize(log, role, env: ENV, sysfs: SYSFS)
        @log = log
        @role = role
        @env = env
        @sysfs = sysfs
        @on = false
      end

      # @return [Boolean] whether this process asked the kernel to merge its pages
      def on? = @on

      # Asks for merging, or stops it, for this process and those it forks
      # from now on; a process forked before keeps what it inherited.
      # HERD_KSM=1 or =0 wins over the setting.
      # @param setting [Boolean] the `ksm` setting
      # @return [Boolean] whether merging is asked for now
      def apply(setting)
        switch = @env[SWITCH_ENV]
        if EnvSwitch.off?(switch)
          return stop(setting ? "ksm: off (#{SWITCH_ENV}=#{switch})" : nil)
        end
        return stop unless setting || EnvSwitch.on?(switch)
        return @on if @on

        unless Linux.memory_merge(true)
          @log.info(@role, "ksm stepped aside: the kernel refused PR_SET_MEMORY_MERGE " \
            "(it needs Linux 6.4 or later built with CONFIG_KSM)")
          return false
        end
        @on = true
        describe_daemon
        true
      end

      private

      def stop(reason = nil)
        @log.info(@role, reason) if reason
        return false unless @on

        Linux.memory_merge(false)
        @on = false
        @log.info(@role, "ksm: off for the processes forked from now on") unless reason
        false
      end

      def describe_daemon
        run = read("run")
        if run == "1"
          @log.info(@role, "ksm: the kernel may merge identical pages of every process of this server " \
            "(ksmd scans #{read("pages_to_scan")} pages every #{read("sleep_millisecs")} ms)")
        else
          @log.info(@role, "warning: ksm is asked for, but the kernel's KSM daemon does not merge " \
            "(#{@sysfs}/run is #{run || "missing"}): as root, echo 1 > #{@sysfs}/run")
        end
      end

      def read(name)
        File.read(File.join(@sysfs, name)).strip
      rescue SystemCallError
        nil
      end
    end
  end
end
