# frozen_string_literal: true

require_relative "../errors"
require_relative "sample"

module Herd
  module Memory
    # Reads and parses /proc/PID/smaps_rollup, or /proc/PID/smaps on kernels
    # older than 4.14, which have no rollup.
    # @api private
    module Smaps
      # smaps keys → {Sample} fields. Everything else (Referenced, Locked,
      # VmFlags, THPeligible...) is ignored.
      FIELDS = {
        "Rss" => :rss,
        "Pss" => :pss,
        "Pss_Anon" => :pss_anon,
        "Pss_Dirty" => :pss_dirty,
        "Shared_Clean" => :shared_clean,
        "Shared_Dirty" => :shared_dirty,
        "Private_Clean" => :private_clean,
        "Private_Dirty" => :private_dirty,
        "Swap" => :swap,
        "AnonHugePages" => :anon_huge_pages
      }.freeze

      # A field line. Mapping headers start with a lowercase hex address
      # followed by "-", so they can never match, whatever their path says;
      # lines without a kB unit (VmFlags, THPeligible) do not match either.
      FIELD_LINE = /\A([A-Z][A-Za-z_]*):[ \t]+(\d+) kB[ \t]*\z/

      class << self
        # Parses the text of /proc/PID/smaps_rollup.
        # @param text [String]
        # @return [Sample] empty text (a zombie, a kernel thread) gives {Sample.zero}
        # @raise [MemoryReadError] when non-empty text has none of the expected fields
        def parse_rollup(text)
          sum_fields(text)
        end

        # Parses the text of a full /proc/PID/smaps, summing every mapping.
        # @param text [String]
        # @return [Sample]
        # @raise [MemoryReadError] when non-empty text has none of the expected fields
        def parse_smaps(text)
          sum_fields(text)
        end

        # Reads one process's memory.
        # @param pid [Integer]
        # @param proc_root [String] where procfs is mounted
        # @return [Sample]
        # @raise [NoSuchProcess] when the process does not exist or has exited
        # @raise [MemoryReadError] when there is no /proc or reading is not allowed
        def read(pid, proc_root: "/proc")
          raise no_proc(proc_root) unless File.directory?(proc_root)

          dir = File.join(proc_root, Integer(pid).to_s)
          rollup = read_proc_file(dir, "smaps_rollup", pid)
          return parse_rollup(rollup) if rollup

          smaps = read_proc_file(dir, "smaps", pid)
          unless smaps
            raise MemoryReadError, "cannot read #{dir}/smaps: no such file (herd needs Linux's /proc with smaps)"
          end

          parse_smaps(smaps)
        end

        private

        # @return [String, nil] nil when the file is missing but the process is
        #   not (an old kernel without smaps_rollup)
        def read_proc_file(dir, name, pid)
          path = File.join(dir, name)
          File.read(path)
        rescue Errno::ENOENT
          raise no_such_process(pid) unless File.directory?(dir)

          nil
        rescue Errno::ESRCH # exited between open and read, or a zombie
          raise no_such_process(pid)
        rescue Errno::EACCES, Errno::EPERM
          raise permission_denied(path)
        end

        def sum_fields(text)
          totals = {}
          text.each_line(chomp: true) do |line|
            next unless (match = FIELD_LINE.match(line))
            next unless (field = FIELDS[match[1]])

            totals[field] = totals.fetch(field, 0) + Integer(match[2], 10) * 1024
          end
          if totals.empty? && !text.strip.empty?
            raise MemoryReadError, "unrecognized smaps format (no \"Rss: N kB\" lines)"
          end

          Sample.new(**totals)
        end

        def no_such_process(pid)
          NoSuchProcess.new("no process with pid #{pid}")
        end

        def no_proc(proc_root)
          MemoryReadError.new("#{proc_root} not found: herd reads process memory from Linux's /proc filesystem " \
            "(this is #{RUBY_PLATFORM})")
        end

        def permission_denied(path)
          MemoryReadError.new("cannot read #{path}: permission denied (run as the process's user or root)")
        end
      end
    end
  end
end
