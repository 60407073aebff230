# frozen_string_literal: true

require_relative "../env_switch"
require_relative "../heap/malloc"

module Herd
  module Cluster
    # The `malloc_arenas` setting: the monitor caps the arenas glibc's
    # malloc may give the threads of every process of the server (the cap
    # is inherited on fork). By default glibc gives each new thread an
    # arena of its own, up to 8 per core, and each arena keeps its own free
    # memory: a job worker's five Sidekiq threads held about half of its
    # own memory in their arenas (docs/COPY_ON_WRITE.md, "Threads and
    # malloc's arenas").
    #
    # The environment wins: MALLOC_ARENA_MAX, or glibc.malloc.arena_max in
    # GLIBC_TUNABLES, which glibc read at start, is left alone; and
    # HERD_MALLOC_ARENAS=N (or 0: glibc's default) overrides the config.
    # @api private
    class MallocArenas
      SWITCH_ENV = "HERD_MALLOC_ARENAS"

      # @param log [Log]
      # @param role [String]
      # @param env [Hash] the environment (tests pass their own)
      # @param malloc [#limit_arenas, #unsupported] glibc's malloc (Heap::Malloc)
      def initialize(log, role, env: ENV, malloc: Heap::Malloc)
        @log = log
        @role = role
        @env = env
        @malloc = malloc
      end

      # @param setting [Integer, false] the `malloc_arenas` setting
      # @return [Integer, nil] the cap set, nil when glibc's own stands
      def apply(setting)
        count, origin = wanted(setting)
        return nil unless count

        if (preset = glibc_environment)
          @log.info(@role, "malloc arenas: #{preset} from the environment (malloc_arenas #{count} left aside)")
          return nil
        end
        unless @malloc.limit_arenas(count)
          @log.info(@role, "malloc_arenas stepped aside: #{@malloc.unsupported || "glibc refused mallopt(M_ARENA_MAX)"}")
          return nil
        end
        @log.info(@role, "malloc arenas: threads share at most #{count} in every process of this server#{origin}")
        count
      end

      private

      # @return [Array(Integer, String), nil] the cap and where it came from
      def wanted(setting)
        switch = @env[SWITCH_ENV]
        return [setting, ""] if switch.nil? || switch.strip.empty?

        count = EnvSwitch.off?(switch) ? 0 : Integer(switch.strip, 10, exception: false)
        if count.nil? || count.negative?
          @log.info(@role, "#{SWITCH_ENV}=#{switch} ignored: give a number of arenas, or 0 for glibc's own")
          return [setting, ""]
        end
        return [count, " (#{SWITCH_ENV}=#{switch})"] if count.positive?

        @log.info(@role, "malloc arenas: glibc's own (#{SWITCH_ENV}=#{switch})") if setting
        nil
      end

      def glibc_environment
        max = @env["MALLOC_ARENA_MAX"]
        return "MALLOC_ARENA_MAX=#{max}" if max && !max.strip.empty?

        tunable = @env["GLIBC_TUNABLES"].to_s[/glibc\.malloc\.arena_max=[^:]*/]
        "GLIBC_TUNABLES #{tunable}" if tunable
      end
    end
  end
end
