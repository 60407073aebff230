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
    # what it found. HERD_KSM=1 or =0 turns it on or off whatever the config
    # says.
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
        # A parent may have asked already (systemd's MemoryKSM=yes): the
        # request is inherited, and only this process can take it back.
        @on = Linux.memory_merge?
      end

      # @return [Boolean] whether this process asks the kernel to merge its pages
      def on? = @on

      # Asks for merging, or stops it, for this process and those it forks
      # from now on; a process forked before keeps what it inherited.
      # @param setting [Boolean] the `ksm` setting
      # @return [Boolean] whether merging is asked for now
      def apply(setting)
        switch = @env[SWITCH_ENV]
        if EnvSwitch.off?(switch)
          @log.info(@role, "ksm: off (#{SWITCH_ENV}=#{switch})") if setting || @on
          return stop
        end
        from_env = !setting && EnvSwitch.on?(switch)
        return stop unless setting || from_env

        start(from_env ? " (#{SWITCH_ENV}=#{switch})" : "")
      end

      private

      def start(origin)
        return true if @on

        unless Linux.memory_merge(true)
          why = Linux.available? ? "the kernel refused PR_SET_MEMORY_MERGE (it needs Linux 6.4 or later built with " \
            "CONFIG_KSM)" : "not Linux"
          @log.info(@role, "ksm stepped aside: #{why}")
          return false
        end
        @on = true
        describe_daemon(origin)
        true
      end

      def stop
        return false unless @on

        if Linux.memory_merge(false)
          @on = false
          @log.info(@role, "ksm: off for the processes forked from now on")
        else
          @log.info(@role, "warning: ksm: the kernel did not take back the request to merge pages; it stays on")
        end
        @on
      end

      def describe_daemon(origin)
        run = read("run")
        if run == "1"
          @log.info(@role, "ksm: the kernel may merge identical pages of every process of this server#{origin} " \
            "(ksmd scans #{read("pages_to_scan")} pages every #{read("sleep_millisecs")} ms)")
        else
          @log.info(@role, "warning: ksm is asked for#{origin}, but the kernel's KSM daemon does not merge " \
            "(#{@sysfs}/run is #{run || "missing"}): as root on the host, echo 1 > #{@sysfs}/run")
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
