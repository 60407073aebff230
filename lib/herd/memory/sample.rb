# frozen_string_literal: true

module Herd
  module Memory
    # One process's memory as the kernel accounts it, every field in bytes.
    #
    # The required fields come from every kernel with smaps (2.6.25+). The
    # optional ones are nil when the kernel does not report them: Pss_Anon
    # (5.6+, smaps_rollup only), Pss_Dirty (6.0+), Swap, AnonHugePages.
    #
    # @!attribute [r] rss  resident pages, shared ones counted in full
    # @!attribute [r] pss  resident pages, each shared page divided by its sharers
    # @!attribute [r] pss_anon  the anonymous (heap, stack) part of PSS, or nil
    # @!attribute [r] pss_dirty  the dirty part of PSS, or nil
    # @!attribute [r] shared_clean  pages mapped by other processes too, unmodified
    # @!attribute [r] shared_dirty  pages mapped by other processes too, modified
    # @!attribute [r] private_clean  pages only this process maps, unmodified
    # @!attribute [r] private_dirty  pages only this process maps, modified
    # @!attribute [r] swap  swapped-out anonymous memory, or nil
    # @!attribute [r] anon_huge_pages  anonymous memory backed by transparent huge pages, or nil
    #
    # `to_h` gives the fields only, so `Sample.new(**sample.to_h)` round-trips.
    Sample = Struct.new(:rss, :pss, :pss_anon, :pss_dirty, :shared_clean, :shared_dirty,
      :private_clean, :private_dirty, :swap, :anon_huge_pages, keyword_init: true) do
      # Fields every kernel that has smaps reports.
      def self.required_fields
        %i[rss pss shared_clean shared_dirty private_clean private_dirty]
      end

      # Fields only some kernels report.
      def self.optional_fields
        members - required_fields
      end

      # The additive identity: what a process with nothing mapped (a zombie,
      # a kernel thread) uses.
      # @return [Sample]
      def self.zero
        new(**required_fields.to_h { |field| [field, 0] })
      end

      def initialize(**fields)
        super
        self.class.required_fields.each { |field| self[field] ||= 0 }
        freeze
      end

      # Unique set size: what the kernel would free if this process exited now.
      # @return [Integer] bytes
      def uss
        private_clean + private_dirty
      end

      # Resident pages some other process maps too (parent, siblings, other
      # programs using the same shared library).
      # @return [Integer] bytes
      def shared
        shared_clean + shared_dirty
      end

      # How much of this process's RSS is still shared: the number that falls
      # as copy-on-write copies pages.
      # @return [Float] between 0.0 and 1.0; 0.0 when nothing is resident
      def shared_ratio
        rss.zero? ? 0.0 : shared.fdiv(rss)
      end

      # Field-wise sum. An optional field missing from one side counts as 0
      # (a zombie's zero sample must not blank out a total); missing from both
      # it stays nil.
      # @param other [Sample]
      # @return [Sample]
      def +(other)
        raise TypeError, "can't add #{other.class} to #{self.class}" unless other.is_a?(Sample)

        sums = members.to_h do |field|
          mine = self[field]
          theirs = other[field]
          [field, (mine.nil? && theirs.nil?) ? nil : mine.to_i + theirs.to_i]
        end
        self.class.new(**sums)
      end
    end
  end
end
