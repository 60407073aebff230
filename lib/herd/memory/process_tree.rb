# frozen_string_literal: true

module Herd
  module Memory
    # Finds a process's descendants and titles through /proc.
    #
    # Processes come and go while we read: one that exits mid-read is left
    # out, never an error.
    # @api private
    class ProcessTree
      # @param proc_root [String] where procfs is mounted; tests point it at a fake tree
      def initialize(proc_root: "/proc")
        @proc_root = proc_root
      end

      # @param pid [Integer]
      # @return [Boolean]
      def exist?(pid)
        File.directory?(path(pid))
      end

      # Direct children, in ascending pid order.
      # @param pid [Integer]
      # @return [Array<Integer>]
      def children(pid)
        from_children_files(pid) || parent_map.fetch(pid, [])
      end

      # Every descendant, depth-first (a child, then its own descendants, then
      # the next child), so the order draws a tree.
      # @param pid [Integer]
      # @return [Array<Integer>] without pid itself
      def descendants(pid)
        scan = nil # one /proc scan per walk when the children files are missing
        children_of = ->(parent) { from_children_files(parent) || (scan ||= parent_map).fetch(parent, []) }
        walk(pid, children_of, {pid => true})
      end

      # @param pid [Integer]
      # @return [Integer, nil] nil when the process is gone
      def ppid(pid)
        stat_fields(pid)&.fetch(1)&.then { |field| Integer(field, 10) }
      end

      # The command line as `ps` shows it, which is where Process.setproctitle
      # writes; the executable name (comm) when the command line is empty.
      # @param pid [Integer]
      # @return [String, nil] nil when the process is gone
      def title(pid)
        cmdline = read(pid, "cmdline")&.b&.sub(/\0+\z/, "")
        return cmdline.tr("\0", " ").force_encoding(Encoding::UTF_8).scrub if cmdline && !cmdline.empty?

        read(pid, "comm")&.chomp
      end

      private

      def walk(pid, children_of, seen)
        children_of.call(pid).each_with_object([]) do |child, found|
          next if seen[child] || !exist?(child) # pid reuse could make a loop; vanished ones are skipped

          seen[child] = true
          found << child
          found.concat(walk(child, children_of, seen))
        end
      end

      # Children are listed per thread: a child forked from a non-main thread
      # appears only under that thread's task, so read every thread's file.
      # @return [Array<Integer>, nil] nil when this kernel has no children
      #   files (built without CONFIG_PROC_CHILDREN)
      def from_children_files(pid)
        task_dir = File.join(path(pid), "task")
        tids = Dir.children(task_dir)
        pids = tids.flat_map do |tid|
          text = read_optional(File.join(task_dir, tid, "children"))
          return nil if text.nil? && File.directory?(File.join(task_dir, tid))

          text.to_s.split.map { |field| Integer(field, 10) }
        end
        pids.uniq.sort
      rescue Errno::ENOENT, Errno::ESRCH, Errno::ENOTDIR
        exist?(pid) ? nil : []
      end

      # parent pid → child pids, from every /proc/PID/stat.
      def parent_map
        Dir.children(@proc_root).grep(/\A\d+\z/).map { |name| Integer(name, 10) }.sort
          .each_with_object({}) do |pid, map|
            parent = ppid(pid)
            (map[parent] ||= []) << pid if parent
          end
      end

      # Fields of /proc/PID/stat from the state on: index 0 is the state, 1
      # the ppid. comm, in parentheses before them, may itself contain spaces
      # and parentheses, hence the last ")".
      def stat_fields(pid)
        stat = read(pid, "stat") or return nil
        close = stat.rindex(")") or return nil
        fields = stat[(close + 1)..].split
        (fields.size >= 2) ? fields : nil
      end

      def read(pid, name)
        read_optional(File.join(path(pid), name))
      end

      def read_optional(file)
        File.read(file)
      rescue Errno::ENOENT, Errno::ESRCH, Errno::ENOTDIR, Errno::EACCES
        nil
      end

      def path(pid)
        File.join(@proc_root, pid.to_s)
      end
    end
  end
end
