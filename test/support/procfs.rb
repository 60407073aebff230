# frozen_string_literal: true

module Herd
  # What the tests read about a process in /proc. A process that is gone
  # reads as gone (false, nil, empty), never as an error: it may exit while
  # it is read.
  module Procfs
    module_function

    # @return [Array<String>, nil] the fields of /proc/PID/stat from the
    #   state on (0: state, 1: ppid, 2: pgid); nil when gone
    def stat(pid)
      # comm, before them, may hold spaces and parentheses: split at the last ")".
      File.read("/proc/#{pid}/stat").split(") ").last.split
    rescue Errno::ENOENT, Errno::ESRCH
      nil
    end

    # @return [String, nil] the state letter (R, S, T, Z...)
    def state(pid)
      stat(pid)&.first
    end

    # @return [Boolean] alive and not a zombie
    def alive?(pid)
      !["Z", nil].include?(state(pid))
    end

    # @return [Integer] how many descriptors pid has open
    def fds(pid)
      Dir.children("/proc/#{pid}/fd").size
    end

    # @return [Array<String>] where each open descriptor of pid points, in fd
    #   order ("socket", "pipe": inode numbers differ from process to process)
    def descriptors(pid)
      Dir.children("/proc/#{pid}/fd").sort_by(&:to_i).filter_map do |fd|
        File.readlink("/proc/#{pid}/fd/#{fd}").sub(/\A(socket|pipe):\[\d+\]\z/, "\\1")
      rescue Errno::ENOENT
        nil
      end
    end

    # @return [Boolean] whether pid is in process group `group`
    def in_group?(pid, group)
      Process.getpgid(pid) == group
    rescue Errno::ESRCH
      false
    end

    # @param zombies [Boolean] count zombies too (one left in a group that
    #   stopped gracefully is a process nobody reaped)
    # @return [Array<Integer>] the processes of process group `group`
    def group(group, zombies: false)
      Dir.children("/proc").grep(/\A\d+\z/).map(&:to_i).select do |pid|
        fields = stat(pid)
        fields && (zombies || fields[0] != "Z") && Integer(fields[2]) == group
      end
    end

    # @return [Boolean] whether anything listens on TCP `port` (IPv4 or IPv6)
    def listening?(port)
      hex = format("%04X", port)
      %w[/proc/net/tcp /proc/net/tcp6].any? do |table|
        File.readlines(table).drop(1).any? do |row|
          fields = row.split
          fields[1].end_with?(":#{hex}") && fields[3] == "0A" # TCP_LISTEN
        end
      end
    end
  end
end
