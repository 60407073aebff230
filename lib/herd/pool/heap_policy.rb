# frozen_string_literal: true

module Herd
  class Pool
    # Whether a one-call pool (Herd.map and friends) prepares the heap.
    #
    # Preparing writes to most of the heap: its GCs sweep every page with
    # garbage, the fill writes every free slot, sealing writes a header into
    # every free malloc chunk, and the release after the call frees them all
    # again. Every one of those pages was write-protected by the previous
    # call's fork, so each write is a page fault, and in a small process
    # they cost more than the few faults they spare the workers. The pages
    # at stake grow with the process, and so does what preparing saves
    # (docs/POOL.md, "Cost per call"). So a one-call pool prepares only from
    # {MIN_RSS} of resident memory on; a long-lived pool (Herd::Pool.new)
    # prepares once for its whole life and always does.
    #
    # `prepare_heap: false` never prepares; a Hash of options always does
    # (whoever tuned them wants them); `true`, the default, asks this policy.
    # {MIN_RSS_ENV} sets the threshold in MiB (0: always prepare).
    # @api private
    module HeapPolicy
      MIN_RSS = 64 << 20
      MIN_RSS_ENV = "HERD_PREPARE_HEAP_MIN_MB"
      STATM = "/proc/self/statm"

      module_function

      # @param option [Boolean, Hash] the pool's prepare_heap:
      # @param one_call [Boolean] a one-call pool's (Herd.map)
      # @return [Hash, nil] the options for {Heap.prepare}, nil to skip it
      def options(option, one_call:, env: ENV)
        return nil unless option
        return option if option.is_a?(Hash)
        return {} unless one_call

        (resident_bytes >= threshold(env)) ? {} : nil
      end

      # @return [Integer] bytes
      def threshold(env = ENV)
        value = env[MIN_RSS_ENV]
        return MIN_RSS if value.nil? || value.strip.empty?

        [(Float(value) * (1 << 20)).to_i, 0].max
      rescue ArgumentError
        raise ConfigError, "#{MIN_RSS_ENV}=#{value.inspect}: " \
          "must be a number of MiB (0 prepares the heap for every call)"
      end

      # Resident memory of this process; where /proc is missing, the Ruby
      # heap's own size, which is most of what a worker could copy.
      # @return [Integer] bytes
      def resident_bytes
        File.read(STATM).split[1].to_i * page_size
      rescue SystemCallError, IOError
        GC.stat(:heap_allocated_pages) * GC::INTERNAL_CONSTANTS.fetch(:HEAP_PAGE_SIZE, 1 << 16)
      end

      def page_size
        @page_size ||= begin
          require "etc"
          Etc.sysconf(Etc::SC_PAGESIZE)
        rescue NameError, SystemCallError
          4096
        end
      end
    end
  end
end
